import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import HealthProbeArchive

@Suite("Heap")
struct HeapTests {
    @Test("the process is limited to one heap arena per core (2 to 8) from load, unless the user set the allocator's own variables")
    func arenasLimited() throws {
        #if canImport(Glibc)
        let env = ProcessInfo.processInfo.environment
        if env["MALLOC_ARENA_MAX"] != nil || env["GLIBC_TUNABLES"] != nil {
            #expect(Heap.arenaLimit == nil)
        } else {
            // The constructor counts online processors as glibc does (not cgroup quotas).
            let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
            #expect(Heap.arenaLimit == min(max(cores, 2), 8))
        }
        #endif
    }
}
