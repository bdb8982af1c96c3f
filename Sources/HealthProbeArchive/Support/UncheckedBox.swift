/// Moves a value the caller no longer uses (or only uses after the other
/// thread is done with it) to another thread.
/// `@unchecked Sendable`: immutable (one `let`); the sender gives the value up, so one thread at a time uses it.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
