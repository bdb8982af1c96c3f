import Testing
import HealthProbeTestSupport

/// The ports a test server is started on are distinct (a SeaweedFS given the same port for
/// two of its servers answered S3 requests from its volume server).
@Suite("Free loopback ports")
struct FreePortsTests {
    @Test("1,000 ports asked at once are 1,000 distinct ports (taken one at a time and released, some would repeat)")
    func distinct() throws {
        let ports = try freeLoopbackPorts(1000)
        #expect(ports.count == 1000 && Set(ports).count == 1000)
        #expect(ports.allSatisfy { (1...65535).contains($0) })
        // Below the kernel's ephemeral range where it leaves room (Linux: 32768 and up by default).
        if let below = belowEphemeralPorts() { #expect(ports.allSatisfy(below.contains), "\(ports.filter { !below.contains($0) }.prefix(5))") }
    }
}
