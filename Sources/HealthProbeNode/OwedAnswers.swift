import HealthProbeProtocol

/// The answers a session still owes the node: one for each message sent that the server
/// answers (`ReplyDeadline.isAnswered`), one fewer for each reply (`ReplyDeadline.isReply`).
/// The reply deadline and the keepalive, beside each other in one pipeline, each keep one.
struct OwedAnswers {
    private(set) var count = 0

    /// Whether none is owed.
    var none: Bool { count == 0 }

    /// `message` is being sent; returns whether it is owed an answer.
    @discardableResult
    mutating func sending(_ message: SyncOutbound) -> Bool {
        guard ReplyDeadline.isAnswered(message) else { return false }
        count += 1
        return true
    }

    /// A message owed an answer is sent past the handler keeping the count (the keepalive's own `PING`).
    mutating func sendingOwn() { count += 1 }

    /// `message` arrived.
    mutating func received(_ message: SyncInbound) {
        if count > 0, ReplyDeadline.isReply(message) { count -= 1 }
    }
}
