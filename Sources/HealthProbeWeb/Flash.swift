import HealthProbeProtocol

/// What a change said, kept for the next view of the page it redirected to (post-redirect-get),
/// per session (keyed by the session's CSRF token), shown once. Held in memory: a restart
/// loses at most a notice.
actor Flash {
    struct Message: Sendable { let notice: String; let token: EnrollmentToken? }
    private var messages: [String: Message] = [:]

    func put(_ session: String?, _ message: Message) {
        guard let session else { return }
        // Bounded: a flash nobody comes back for is dropped with the others past 1,000.
        if messages.count >= 1_000 { messages.removeAll() }
        messages[session] = message
    }

    func take(_ session: String?) -> Message? {
        guard let session else { return nil }
        return messages.removeValue(forKey: session)
    }
}
