import Synchronization

/// The first of the errors that several threads record; later ones are ignored.
public final class FirstError: Sendable {
    private let first = Mutex<(any Error)?>(nil)

    public init() {}

    /// Records `error` unless one was recorded before; true when it was the first.
    @discardableResult
    public func record(_ error: any Error) -> Bool {
        first.withLock { first in
            guard first == nil else { return false }
            first = error
            return true
        }
    }

    /// The first error recorded, if any.
    public var error: (any Error)? { first.withLock { $0 } }

    /// Throws the first error recorded, if any.
    public func check() throws {
        if let error { throw error }
    }
}
