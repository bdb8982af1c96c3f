/// Moves a value the caller no longer uses (or only uses after the other
/// thread is done with it) to another thread.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
