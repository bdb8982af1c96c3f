import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain HTTP/1.1 GET to 127.0.0.1:`port` (a tool's metrics endpoint), read until the
/// server closes or `timeout` seconds pass: the whole response, head and body.
public func loopbackHTTPGet(port: Int, path: String, timeout: Double = 10) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LoopbackHTTPError(what: "socket", code: errno) }
    defer { close(fd) }
    var wait = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw LoopbackHTTPError(what: "connect to port \(port)", code: errno) }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    guard send(fd, request, request.count, 0) == request.count else { throw LoopbackHTTPError(what: "send", code: errno) }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16384)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        response += buffer[0..<n]
    }
    return String(decoding: response, as: UTF8.self)
}

public struct LoopbackHTTPError: Error, CustomStringConvertible {
    public let what: String
    public let code: Int32
    public var description: String { "\(what) failed (errno \(code))" }
}
