import Foundation

/// The bytes the XML parser reads: the source with the DOCTYPE internal subset
/// blanked (every byte but newlines becomes a space, so line and column
/// numbers stay true; the iOS 16 DTD is malformed, and no entity a DTD declares
/// is ever expanded) and characters XML forbids (C0 controls other than tab,
/// newline, carriage return) replaced by spaces and counted.
final class SanitizingStream: InputStream {
    private let source: ByteSource
    private(set) var bytesRead: Int64 = 0
    private(set) var controlCharactersReplaced = 0
    private(set) var error: (any Error)?
    private var state: State = .prolog
    private var prologTail: [UInt8] = []  // recent bytes, to spot "<!DOCTYPE" and "]>"
    private var doctypeBracket = false
    private var previous: UInt8 = 0
    /// Progress callback (bytes read so far).
    var onProgress: ((Int64) -> Void)?

    private enum State { case prolog, doctype, body }

    init(source: ByteSource) {
        self.source = source
        super.init(data: Data())
    }

    override func open() {}
    override func close() {}
    override var hasBytesAvailable: Bool { true }
    override var streamError: (any Error)? { error }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let n: Int
        do { n = try source.read(buffer, len) } catch {
            self.error = error
            return -1
        }
        if n <= 0 { return 0 }
        bytesRead += Int64(n)
        // The prolog and DOCTYPE byte by byte, then the body (nearly all of the file) in
        // one tight pass.
        var i = 0
        while i < n && state != .body {
            let b = buffer[i]
            switch state {
            case .body:
                break
            case .prolog:
                remember(b)
                if endsWith("<!DOCTYPE") {
                    // Blank what of the keyword is in this buffer ("<!DOCTYP" before it may have
                    // been handed out already only if it straddled two reads; the prolog is at the
                    // very start of the file, inside the first read).
                    for j in Swift.max(0, i - 8)...i { buffer[j] = 0x20 }
                    state = .doctype
                    doctypeBracket = false
                } else if previous == UInt8(ascii: "<") && isNameStart(b) {
                    state = .body
                }
            case .doctype:
                remember(b)
                if b == UInt8(ascii: "[") { doctypeBracket = true }
                let ends = doctypeBracket ? endsWith("]>") : b == UInt8(ascii: ">")
                if b != 0x0A { buffer[i] = 0x20 }
                if ends { state = .body }
            }
            previous = b
            i += 1
        }
        if i < n {
            controlCharactersReplaced += Self.replaceControlCharacters(buffer + i, n - i)
            previous = buffer[n - 1]
        }
        onProgress?(bytesRead)
        return n
    }

    /// Replaces the C0 controls XML forbids (all but tab, newline, carriage return) in
    /// `buffer[0..<n]` with spaces; returns how many.
    static func replaceControlCharacters(_ buffer: UnsafeMutablePointer<UInt8>, _ n: Int) -> Int {
        var replaced = 0
        for i in 0..<n where buffer[i] < 0x20 {
            let b = buffer[i]
            if b != 0x09 && b != 0x0A && b != 0x0D {
                buffer[i] = 0x20
                replaced += 1
            }
        }
        return replaced
    }

    private func isNameStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b >= 0x80
    }

    private func remember(_ b: UInt8) {
        prologTail.append(b)
        if prologTail.count > 16 { prologTail.removeFirst(prologTail.count - 16) }
    }

    private func endsWith(_ s: String) -> Bool {
        let u = Array(s.utf8)
        return prologTail.count >= u.count && Array(prologTail.suffix(u.count)) == u
    }
}
