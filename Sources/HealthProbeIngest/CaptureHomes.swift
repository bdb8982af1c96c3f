import Foundation
import HealthProbeArchive

/// Where a node keeps its capture surfaces (docs/decisions/2026-11-29-capture-surfaces.md):
/// the node's own home is the export.zip and watched-folder surface; each Health Auto
/// Export automation `NAME` has its own home, `HOME/capture/hae-NAME/`, with its own
/// archive, keys and device chain.
public struct CaptureHomes: Sendable {
    public let home: ArchiveHome

    public init(home: ArchiveHome) { self.home = home }

    /// The home of automation `name`.
    public func automation(_ name: String) -> ArchiveHome { ArchiveHome(root: home.root + "/capture/hae-" + name) }

    /// Where automation `name`'s raw bodies are kept.
    public func bodies(_ name: String) -> BodyStore { BodyStore(directory: automation(name).root + "/bodies") }

    /// The automations that have a home, by name.
    public func automations() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: home.root + "/capture")) ?? []
        return names.filter { $0.hasPrefix("hae-") }.map { String($0.dropFirst(4)) }.filter(IngestKeys.validName).sorted()
    }
}
