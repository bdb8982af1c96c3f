import HealthProbeArchive

/// The fuzzing executable's process-wide settings.
public enum FuzzProcess {
    /// Applies the settings every executable applies at start (`ProcessSettings.apply`).
    public static func applySettings() { ProcessSettings.apply() }
}
