import Foundation
import HealthProbeFuzz

#if HP_FUZZ
// Built by scripts/fuzz with libFuzzer (`-sanitize=fuzzer`); main hands over to
// libFuzzer's driver. HP_FUZZ_TARGET picks the target; HP_FUZZ_WRITE_SEEDS=DIR
// writes every target's seeds from HP_FUZZ_VECTORS (Protocol/vectors) to
// DIR/<target>/ and exits.

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

nonisolated(unsafe) var target: FuzzTarget = .frames

/// libFuzzer's entry: one input through the chosen target; a finding aborts (libFuzzer keeps the input).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    if let finding = target.run(bytes) {
        FileHandle.standardError.write(Data("hp-fuzz \(target.rawValue): \(finding)\n".utf8))
        abort()
    }
    return 0
}

@main
struct HPFuzz {
    static func main() {
        FuzzProcess.applySettings()
        let env = ProcessInfo.processInfo.environment
        if let out = env["HP_FUZZ_WRITE_SEEDS"] {
            let vectors = URL(fileURLWithPath: env["HP_FUZZ_VECTORS"] ?? "Protocol/vectors")
            do {
                for t in FuzzTarget.allCases {
                    let dir = out + "/" + t.rawValue
                    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                    for (i, seed) in try FuzzSeeds.seeds(t, vectors: vectors).enumerated() {
                        try Data(seed.bytes).write(to: URL(fileURLWithPath: dir + "/seed-\(i)"))
                    }
                }
            } catch {
                FileHandle.standardError.write(Data("hp-fuzz: cannot write seeds: \(error)\n".utf8))
                exit(1)
            }
            exit(0)
        }
        guard let name = env["HP_FUZZ_TARGET"], let t = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("hp-fuzz: set HP_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))\n".utf8))
            exit(2)
        }
        target = t
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in testOneInput(data, size) })
    }
}
#else
/// Without libFuzzer: replays inputs (seeds, kept findings, a corpus) through a
/// target and reports what fails. `hp-fuzz TARGET PATH...` (files or directories).
@main
struct HPFuzz {
    static func main() {
        FuzzProcess.applySettings()
        let args = Array(CommandLine.arguments.dropFirst())
        guard let name = args.first, let target = FuzzTarget(rawValue: name), args.count > 1 else {
            print("usage: hp-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) PATH...  (scripts/fuzz runs libFuzzer)")
            exit(2)
        }
        var files: [String] = []
        for path in args.dropFirst() {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { print("hp-fuzz: no such file: \(path)"); exit(2) }
            if isDir.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                files += names.sorted().map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        var failed = 0
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            if let finding = target.run(Array(data)) {
                failed += 1
                print("\(file): \(finding)")
            }
        }
        print("\(target.rawValue): \(files.count) inputs, \(failed) failed")
        exit(failed == 0 ? 0 : 1)
    }
}
#endif
