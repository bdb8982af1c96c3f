import Foundation
import Testing
@testable import HealthProbeArchive
import HealthProbeCanonical
@testable import HealthProbeSimulator
import HealthProbeTestSupport

@Suite("Verifying bundle lines on threads beside the apply")
struct VerifiedLinesTests {
    func lines() throws -> [[UInt8]] {
        let t = TempHome()
        try t.simulate(seed: 3, days: [3], types: [SimulatedType.all[0]])
        let node = try t.open()
        return try bundleLines(node, 1, previous: nil).0
    }

    @Test("every line comes out once, in order, in batches; the verifier has read them all")
    func inOrder() throws {
        let all = try lines()
        #expect(all.count > 3 * VerifiedLines.batchSize, "the bundle spans several batches")
        let verified = VerifiedLines(all)
        var out: [BundleLine] = []
        while let batch = try verified.next() {
            #expect(batch.count <= VerifiedLines.batchSize)
            out += batch
        }
        #expect(out.count == all.count)
        // Each decoded line, written again by its typed model, is the line that came in.
        for (decoded, line) in zip(out, all) {
            switch decoded {
            case .header(let h): #expect(try CanonicalJSON.encode(h.json) == line)
            case .item(let item): #expect(try item.canonicalBytes == line)
            case .trailer(let t): #expect(try CanonicalJSON.encode(t.json) == line)
            }
        }
        #expect(verified.finish().itemCount == all.count - 2)
    }

    @Test("an error is delivered after every line that verified before it")
    func errorInOrder() throws {
        var all = try lines()
        let bad = VerifiedLines.batchSize * 2 + 7
        all[bad] = Array("{\"kind\": \"sample\"}".utf8)  // not canonical
        let verified = VerifiedLines(all)
        var delivered = 0
        #expect { while let batch = try verified.next() { delivered += batch.count } } throws: { ($0 as? BundleError)?.code == .notCanonical }
        #expect(delivered == bad)
    }

    @Test("every committed bundle vector gives, decoded on two threads, what the one-line-at-a-time verifier gives: the same lines, error, line and manifest hash")
    func vectorsAsOneThread() throws {
        let dir = vectorURL("bundles")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".jsonl") }.sorted()
        #expect(files.count >= 30)
        for file in files {
            let path = dir.appendingPathComponent(file).path
            // One line at a time.
            var single = BundleVerifier()
            var singleLines = 0
            var singleError: BundleError?
            do { try single.feed(all: try FileLines(path: path)) { _ in singleLines += 1 } } catch let e as BundleError { singleError = e }
            // Batches dealt to the decoding threads, taken back in order.
            let verified = VerifiedLines(try FileLines(path: path))
            var lines = 0
            var error: BundleError?
            do { while let batch = try verified.next() { lines += batch.count } } catch let e as BundleError { error = e }
            #expect(lines == singleLines, "\(file)")
            #expect(error?.code == singleError?.code && error?.line == singleError?.line, "\(file): \(String(describing: error)) against \(String(describing: singleError))")
            if error == nil {
                #expect(verified.finish().manifestHash == single.manifestHash, "\(file)")
            } else {
                verified.cancel()
            }
        }
    }

    @Test("an error in any batch, whichever thread decoded it, comes after exactly the lines before it")
    func errorInEachDecoder() throws {
        let all = try lines()
        for bad in [1, VerifiedLines.batchSize - 1, VerifiedLines.batchSize, VerifiedLines.batchSize + 3, VerifiedLines.batchSize * 3 + 1, all.count - 1] {
            var edited = all
            edited[bad] = Array("{\"kind\":\"sample\"} ".utf8)  // not JSON's canonical form
            let verified = VerifiedLines(edited)
            var delivered = 0
            #expect { while let batch = try verified.next() { delivered += batch.count } } throws: { ($0 as? BundleError)?.line == bad + 1 }
            #expect(delivered == bad, "line \(bad + 1)")
            verified.cancel()
        }
    }

    @Test("stopping early ends the verifying thread (no hang, however many lines are left)")
    func cancel() throws {
        let all = try lines()
        let verified = VerifiedLines(all + all + all + all)
        _ = try verified.next()
        // Cancel on another thread, so that a hang is a failure here rather than a stuck suite.
        let ended = DispatchSemaphore(value: 0)
        let box = UncheckedBox(verified)
        Thread.detachNewThread {
            box.value.cancel()
            box.value.cancel()  // twice is harmless
            ended.signal()
        }
        #expect(ended.wait(timeout: .now() + 30) == .success, "cancel did not return within 30 s")
    }
}
