import Foundation
import Mustache
import Testing
@testable import HealthProbeWeb

/// A page model made into dictionaries and arrays before rendering renders exactly as the
/// model itself: nested sections, lists of records and of strings, a nil member that falls
/// back to an outer one, empty lists, flags, tuples, and values shown by their description.
@Suite("Page models rendered from their tree")
struct RenderTreeTests {
    struct Row { var name: String; var note: String?; var count: Int; var tags: [String]; var flag: Bool }
    struct Card { var title: String; var note: String?; var rows: [Row]; var empty: [Row]; var missing: Row? }
    struct Model {
        var note: String
        var card: Card
        var cards: [Card]
        var when: Date
        var pairs: [(name: String, css: String)]
        var zero: Int
        var absent: String?
        var one: Set<String>
        var backwards: ReversedCollection<[String]>
        var kind: Kind
    }
    enum Kind: String { case loss }

    static let template = """
        {{note}}|{{#card}}{{title}}:{{note}}{{#rows}}[{{name}} {{note}} {{count}}{{#flag}} F{{/flag}}{{^flag}} f{{/flag}}{{#tags}}<{{.}}>{{/tags}}]{{/rows}}\
        {{^empty}}(none){{/empty}}{{#missing}}M{{/missing}}{{^missing}}m{{/missing}}{{/card}}|{{#cards}}{{title}}={{note}};{{/cards}}|{{when}}|\
        {{#pairs}}{{name}}/{{css}} {{/pairs}}|{{#zero}}z{{zero}}{{/zero}}|{{^absent}}no absent{{/absent}}{{absent}}|{{card.rows.0.name}}|\
        {{count(cards)}}{{#first(cards)}}!{{title}}{{/first(cards)}}{{#empty(card.empty)}}e{{/empty(card.empty)}}|{{#one}}{{.}}{{/one}}|{{#backwards}}{{.}}{{/backwards}}|{{kind}}
        """

    @Test("the tree renders byte for byte as the model")
    func sameOutput() throws {
        let rows = [Row(name: "a&b", note: nil, count: 0, tags: ["x", "<y>"], flag: true), Row(name: "c", note: "own", count: 3, tags: [], flag: false)]
        let model = Model(note: "outer", card: Card(title: "T", note: nil, rows: rows, empty: [], missing: nil),
                          cards: [Card(title: "U", note: "inner", rows: [], empty: [], missing: rows[0]), Card(title: "V", note: nil, rows: rows, empty: rows, missing: nil)],
                          when: Date(timeIntervalSince1970: 1_750_000_000), pairs: [("p", "q"), ("r", "s")], zero: 0, absent: nil,
                          one: ["only"], backwards: ["1", "2", "3"].reversed(), kind: .loss)
        let t = try MustacheTemplate(string: Self.template)
        let direct = t.render(model)
        let tree = t.render(RenderTree.of(model))
        #expect(tree == direct)
        #expect(direct.contains("outer|T:outer[a&amp;b outer 0 F<x><&lt;y&gt;>][c own 3 f](none)m|U=inner;V=outer;|"), "\(direct)")
        #expect(direct.hasSuffix("|2!Ue|only|321|loss"), "\(direct)")
    }
}
