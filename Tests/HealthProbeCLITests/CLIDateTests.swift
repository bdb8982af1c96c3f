import ArgumentParser
import Testing
@testable import HealthProbeCLI

@Suite("Dates on command lines")
struct CLIDateTests {
    @Test("a day, a UTC time and canonical text with milliseconds are all UTC Unix seconds")
    func accepted() throws {
        #expect(try CLIDate.parse("2025-01-31", option: "--from") == 1_738_281_600)
        #expect(try CLIDate.parse("2025-01-31T12:00:00Z", option: "--from") == 1_738_324_800)
        #expect(try CLIDate.parse("2025-01-31T12:00:00.250Z", option: "--from") == 1_738_324_800.25)
    }

    @Test("anything else is a validation error naming the option and the text")
    func refused() {
        for text in ["31.01.2025", "2025-13-01", "", "yesterday"] {
            #expect {
                _ = try CLIDate.parse(text, option: "--to")
            } throws: { error in
                guard let e = error as? ValidationError else { return false }
                return e.message.contains("--to") && e.message.contains("2025-01-31")
            }
        }
    }
}
