import Foundation

/// Copies the directory `from` to `to` with `/bin/cp -a`, as an administrator copies a data
/// directory (a new directory, so a new inode); throws when cp fails.
public func copyDirectory(_ from: String, _ to: String) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/cp")
    p.arguments = ["-a", from, to]
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw CopyFailed(from: from, status: p.terminationStatus) }
}

/// `copyDirectory` found cp failing.
public struct CopyFailed: Error, CustomStringConvertible {
    public let from: String
    public let status: Int32
    public var description: String { "cp -a \(from) exited with status \(status)" }
}
