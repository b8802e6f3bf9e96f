import Foundation
import Testing

@testable import Engine

/// A request body with a key given twice in one object is found, however the key is spelled.
struct JSONKeysTests {
    @Test(arguments: [
        (#"{"url": "a", "url": "b"}"#, "url"),
        (#"{"url": "a", "u\u0072l": "b"}"#, "url"),
        (#"{"a": {"x": 1, "x": 2}, "b": 3}"#, "x"),
        (#"{"a": [{"k": 1}, {"k": 2, "k": 3}]}"#, "k"),
        (#"{"tags": ["x", "x"], "tags": []}"#, "tags"),
    ])
    func aKeyGivenTwiceIsFound(body: String, key: String) {
        #expect(JSONKeys.duplicate(in: Data(body.utf8)) == key)
    }

    @Test(arguments: [
        #"{"url": "a", "destination": "b"}"#,
        // The same key in different objects, keys inside strings, and arrays of equal values are not duplicates.
        #"{"a": {"x": 1}, "b": {"x": 2}}"#,
        #"{"a": "\"a\": \"a\"", "b": ["a", "a"]}"#,
        #"{"mirrors": ["http://h/a", "http://h/a"]}"#,
        // Not JSON: the decoder says what is wrong.
        #"{"a": "unclosed"#,
        "",
    ])
    func bodiesWithoutOneAreLeftToTheDecoder(body: String) {
        #expect(JSONKeys.duplicate(in: Data(body.utf8)) == nil)
    }

    /// Two different keys that are not UTF-8 are not one key given twice: the decoder refuses the body.
    @Test func keysThatAreNotUTF8AreLeftToTheDecoder() {
        let body =
            Data(#"{"url": "a", ""#.utf8) + Data([0xFF]) + Data(#"": 1, ""#.utf8) + Data([0xFE])
            + Data(#"": 2}"#.utf8)
        #expect(JSONKeys.duplicate(in: body) == nil)
    }
}
