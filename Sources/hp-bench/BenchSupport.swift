import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HealthProbeCLI

/// Options every benchmark takes.
struct BenchOptions: ParsableArguments {
    @Option(name: .long, help: "Samples per page (one transaction each).")
    var pageSize: Int = 5000

    @Option(name: .long, help: "Samples one capture transaction may hold (pipelined writes).")
    var transactionSamples: Int = 50_000

    @Option(name: .long, help: "Directory for the throw-away data (default: a temporary directory).")
    var dir: String?

    @Flag(name: .long, help: "One JSON object per phase.")
    var json = false

    @Flag(name: .long, help: "Keep the directory afterwards.")
    var keep = false

    func validate() throws {
        guard (1...100_000).contains(pageSize) else { throw ValidationError("--page-size must be 1...100000") }
        guard (1...10_000_000).contains(transactionSamples) else { throw ValidationError("--transaction-samples must be 1...10000000") }
    }

    /// `--dir`, else a fresh temporary directory named after the benchmark.
    func workDirectory(_ label: String) -> String {
        dir ?? (NSTemporaryDirectory() + "hp-bench-\(label)-\(UUID().uuidString)")
    }

    /// Removes the work directory unless `--keep`.
    func cleanUp(_ root: String) {
        if !keep { try? FileManager.default.removeItem(atPath: root) }
    }
}

/// One measured phase (printed as a table row or one JSON object).
struct PhaseResult: Codable {
    var phase: String
    var samples: Int
    var seconds: Double
    var samplesPerSecond: Double
    var archiveBytes: Int64
    var peakRssBytes: Int64
    var notes: String?
}

enum Measure {
    /// Peak resident set size of this process (VmHWM), in bytes.
    static func peakRSS() -> Int64 { statusField("VmHWM:") }
    static func currentRSS() -> Int64 { statusField("VmRSS:") }
    /// Peak resident set size of another process (VmHWM), in bytes.
    static func peakRSS(pid: Int32) -> Int64 { statusField("VmHWM:", process: "\(pid)") }

    /// CPU time (user + system) another process has used so far, in seconds (Linux).
    static func cpuSeconds(pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        // After "pid (comm)": state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU time (user + system) of this process's children that have ended and been waited for.
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        let children = __rusage_who_t(RUSAGE_CHILDREN.rawValue)
        #else
        let children = RUSAGE_CHILDREN
        #endif
        guard getrusage(children, &usage) == 0 else { return 0 }
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    private static func statusField(_ name: String, process: String = "self") -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            let kb = line.split(separator: " ").compactMap { Int64($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }

    /// Resets the peak RSS counter so each phase reports its own peak (Linux).
    /// Free heap memory is first handed back to the system (`malloc_trim`):
    /// phases that run as separate processes in real use (a capture, then a
    /// sync) share this one, and glibc would keep the earlier phase's freed
    /// blocks resident, counting them against the next.
    static func resetPeakRSS() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32  // glibc's malloc_trim (not in Swift's Glibc module)
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
        #endif
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// Size of a SQLite database with its WAL.
    static func databaseBytes(_ path: String) -> Int64 {
        var total: Int64 = 0
        for suffix in ["", "-wal"] {
            if let attrs = try? FileManager.default.attributesOfItem(atPath: path + suffix), let n = attrs[.size] as? NSNumber {
                total += n.int64Value
            }
        }
        return total
    }

    static func time<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let r = try body()
        return (r, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
}

enum Report {
    static func print(_ results: [PhaseResult], json: Bool) throws {
        if json {
            for r in results { try Output.jsonLine(r) }
            return
        }
        var t = TextTable(["phase", "samples", "seconds", "samples/s", "archive MB", "peak RSS MB", "notes"], rightAligned: [1, 2, 3, 4, 5])
        for r in results {
            t.add([r.phase, String(r.samples), String(format: "%.2f", r.seconds), String(format: "%.0f", r.samplesPerSecond),
                   String(format: "%.1f", Double(r.archiveBytes) / 1_048_576), String(format: "%.1f", Double(r.peakRssBytes) / 1_048_576),
                   r.notes ?? ""])
        }
        Swift.print(t.render())
    }
}
