import CLibXML2

/// The reader that builds a `Metalink` (v4 or v3) element by element, checking every value and
/// every bound as it goes; the first problem stops the parser and is the error `read` throws.
final class MetalinkReader {
    /// What an open element is, from its name and its parent's role (v4 and v3 layouts both).
    private enum Role {
        case root, files, file, size, hash, verification, pieces, pieceHash, resources, url, ignored

        init(_ name: String, in parent: Role) {
            switch (parent, name) {
            case (.root, "files"): self = .files
            case (.root, "file"), (.files, "file"): self = .file
            case (.file, "size"): self = .size
            case (.file, "hash"), (.verification, "hash"): self = .hash
            case (.file, "verification"): self = .verification
            case (.file, "pieces"), (.verification, "pieces"): self = .pieces
            case (.pieces, "hash"): self = .pieceHash
            case (.file, "resources"): self = .resources
            case (.file, "url"), (.resources, "url"): self = .url
            default: self = .ignored
            }
        }

        var keepsText: Bool { self == .size || self == .hash || self == .pieceHash || self == .url }
    }

    /// A `file` element being read.
    private struct FileDraft {
        var name: String
        var size: Int64?
        var hashes: [Metalink.HashKind: [UInt8]] = [:]
        var pieces: [Metalink.HashKind: Metalink.Pieces] = [:]
        var sources: [Metalink.Source] = []
        var urlElements = 0
    }

    /// A `pieces` element being read; `kind` nil when its type is not one Meterwise checks (its hashes are skipped).
    private struct PiecesDraft {
        var kind: Metalink.HashKind?
        var length: Int64
        var count = 0
        var hashes: [[UInt8]] = []
        var indexes: [Int] = []
    }

    private let source: String
    private let limits: Metalink.Limits
    private var namespace = ""
    private var isV3 = false
    private var roles: [Role] = []
    private var elements = 0
    private var text = ""
    private var textBytes = 0
    private var failure: TransferError?
    private var xmlError: (code: Int, line: Int)?
    /// The line the parser is on.
    private var line = 0
    private var files: [Metalink.File] = []
    private var names: Set<String> = []
    private var file: FileDraft?
    private var pieces: PiecesDraft?
    private var hashKind: Metalink.HashKind?
    private var urlAttributes: [String: String] = [:]

    init(source: String, limits: Metalink.Limits) {
        self.source = source
        self.limits = limits
    }

    /// Parses `bytes` (already screened by `Metalink.parse`) into its files, with libxml2's pull parser: no
    /// network, no entity substitution, no DTD loaded, no recovery, nothing printed.
    func read(_ bytes: [UInt8]) throws(TransferError) -> [Metalink.File] {
        // The reader parses the buffer in place: a copy that lives as long as it does.
        let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(1, bytes.count))
        defer { buffer.deallocate() }
        for (i, byte) in bytes.enumerated() { buffer[i] = CChar(bitPattern: byte) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        guard let reader = xmlReaderForMemory(buffer.baseAddress, Int32(bytes.count), "metalink", "UTF-8", options)
        else {
            throw Metalink.failure(source, line: nil, "the XML parser could not start (out of memory?)")
        }
        defer { xmlFreeTextReader(reader) }
        let errors = ErrorBox()
        let box = Unmanaged.passRetained(errors)
        defer { box.release() }
        xmlTextReaderSetStructuredErrorHandler(
            reader,
            { context, error in
                guard let context, let error else { return }
                let box = Unmanaged<ErrorBox>.fromOpaque(context).takeUnretainedValue()
                if box.first == nil, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue {
                    box.first = (Int(error.pointee.code), Int(error.pointee.line))
                }
            }, box.toOpaque())
        while failure == nil, xmlError == nil {
            let step = xmlTextReaderRead(reader)
            line = Int(xmlTextReaderGetParserLineNumber(reader))
            if step == 0 { break }
            guard step > 0 else {
                xmlError = errors.first ?? (0, line)
                break
            }
            visit(reader)
        }
        if let failure { throw failure }
        if let xmlError, elements == 0, xmlError.code == 4 || xmlError.code == 5 {
            throw Metalink.failure(source, line: nil, "there is no `metalink` element")
        }
        if let xmlError {
            throw Metalink.failure(
                source, line: xmlError.line, "the file is not well-formed XML (\(Self.describe(xmlError.code)))")
        }
        guard !namespace.isEmpty else {
            throw Metalink.failure(source, line: nil, "there is no `metalink` element")
        }
        guard !files.isEmpty else {
            throw Metalink.failure(source, line: nil, "there is no `file` element: the Metalink describes no file")
        }
        return files
    }

    /// Where libxml2 reports its first error (its structured error handler's context).
    private final class ErrorBox {
        var first: (code: Int, line: Int)?
    }

    /// The node the reader stands on.
    private func visit(_ reader: xmlTextReaderPtr) {
        switch xmlTextReaderNodeType(reader) {
        case Int32(XML_READER_TYPE_ELEMENT.rawValue):
            let name = Self.string(xmlTextReaderConstLocalName(reader)) ?? ""
            let namespaceURI = Self.string(xmlTextReaderConstNamespaceUri(reader))
            let empty = xmlTextReaderIsEmptyElement(reader) == 1
            var attributes: [String: String] = [:]
            while xmlTextReaderMoveToNextAttribute(reader) == 1 {
                guard xmlTextReaderIsNamespaceDecl(reader) != 1, xmlTextReaderConstNamespaceUri(reader) == nil,
                    let key = Self.string(xmlTextReaderConstLocalName(reader))
                else { continue }
                attributes[key] = Self.string(xmlTextReaderConstValue(reader)) ?? ""
            }
            _ = xmlTextReaderMoveToElement(reader)
            didStart(name, namespaceURI: namespaceURI, attributes: attributes)
            if empty { didEnd() }
        case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
            didEnd()
        case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue),
            Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
            addText(Self.string(xmlTextReaderConstValue(reader)) ?? "")
        case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue), Int32(XML_READER_TYPE_ENTITY_REFERENCE.rawValue),
            Int32(XML_READER_TYPE_ENTITY.rawValue):
            fail("a Metalink file needs no DTD; entity declarations and references are refused (an entity bomb)")
        default:
            break  // comments, processing instructions, the XML declaration
        }
    }

    private static func string(_ pointer: UnsafePointer<xmlChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    private func didStart(_ name: String, namespaceURI: String?, attributes: [String: String]) {
        guard failure == nil, xmlError == nil else { return }
        elements += 1
        guard elements <= limits.elements else {
            return fail("the file has more than \(limits.elements) elements")
        }
        guard roles.count < limits.depth else {
            return fail("elements are nested more than \(limits.depth) deep")
        }
        textBytes = 0
        guard let parent = roles.last else { return openRoot(name, namespaceURI, nil) }
        let role = namespaceURI == namespace ? Role(name, in: parent) : .ignored
        roles.append(role)
        if role.keepsText { text = "" }
        switch role {
        case .file: openFile(attributes)
        case .hash: hashKind = Metalink.HashKind(metalinkType: attributes["type"])
        case .pieces: openPieces(attributes)
        case .pieceHash: openPieceHash(attributes)
        case .url: openURL(attributes)
        default: break
        }
    }

    private func didEnd() {
        guard failure == nil, xmlError == nil, let role = roles.popLast() else { return }
        textBytes = 0
        let value = role.keepsText ? Self.trimmed(text) : ""
        switch role {
        case .size: closeSize(value)
        case .hash: closeHash(value)
        case .pieceHash: closePieceHash(value)
        case .pieces: closePieces()
        case .url: closeURL(value)
        case .file: closeFile()
        default: break
        }
    }

    private func addText(_ string: String) {
        guard failure == nil, xmlError == nil else { return }
        textBytes += string.utf8.count
        guard textBytes <= limits.textBytes else {
            return fail("an element's text is longer than the \(limits.textBytes >> 10) KiB accepted")
        }
        if roles.last?.keepsText == true { text += string }
    }

    private func fail(_ what: String) {
        guard failure == nil else { return }
        failure = Metalink.failure(source, line: line, what)
    }

    // MARK: - Elements

    private func openRoot(_ name: String, _ namespaceURI: String?, _ qualified: String?) {
        let namespace = namespaceURI ?? ""
        guard name == "metalink", namespace == Metalink.namespaceV4 || namespace == Metalink.namespaceV3 else {
            let inNamespace = namespace.isEmpty ? "in no namespace" : "in the namespace `\(Metalink.shown(namespace))`"
            return fail(
                "the root element is `\(Metalink.shown(qualified ?? name))` \(inNamespace), not `metalink` in \(Metalink.namespaceV4) (Metalink 4) or \(Metalink.namespaceV3) (Metalink 3): this is not a Metalink file"
            )
        }
        self.namespace = namespace
        isV3 = namespace == Metalink.namespaceV3
        roles.append(.root)
    }

    private func openFile(_ attributes: [String: String]) {
        guard files.count < limits.files else {
            return fail("the Metalink lists more than \(limits.files) files")
        }
        let name = attributes["name"] ?? ""
        if let problem = Self.problem(name: name) { return fail(problem) }
        guard names.insert(name).inserted else {
            return fail("two `file` elements are named `\(Metalink.shown(name))`")
        }
        file = FileDraft(name: name)
    }

    private func closeSize(_ value: String) {
        guard file?.size == nil else { return fail("the file has more than one `size`") }
        guard let size = Metalink.decimal(value, max: ObjectLimits.maxBytes) else {
            return fail(
                "the size `\(Metalink.shown(value))` is not a number of bytes from 0 to 1 PiB (\(ObjectLimits.maxBytes))"
            )
        }
        file?.size = size
    }

    private func closeHash(_ value: String) {
        guard let kind = hashKind else { return }
        hashKind = nil
        guard let digest = Metalink.bytes(hex: value, count: kind.byteCount) else {
            return fail(
                "the \(kind.rawValue) hash `\(Metalink.shown(value))` is not \(2 * kind.byteCount) hex digits")
        }
        if let known = file?.hashes[kind], known != digest {
            return fail("the file has two different \(kind.rawValue) hashes")
        }
        file?.hashes[kind] = digest
    }

    private func openPieces(_ attributes: [String: String]) {
        guard let kind = Metalink.HashKind(metalinkType: attributes["type"]) else {
            pieces = PiecesDraft(kind: nil, length: 0)
            return
        }
        let text = attributes["length"] ?? ""
        guard let length = Metalink.decimal(text, max: 1 << 30), length >= 1 << 10 else {
            return fail(
                "the pieces `length` `\(Metalink.shown(text))` is not a number of bytes from 1 KiB (1024) to 1 GiB (1073741824)"
            )
        }
        if let size = file?.size {
            let count = Self.pieceCount(size: size, length: length)
            guard count <= Int64(limits.pieces) else {
                return fail(
                    "pieces of \(length) bytes cut the file's \(size) bytes into \(count) pieces, more than the \(limits.pieces) accepted"
                )
            }
        }
        pieces = PiecesDraft(kind: kind, length: length)
    }

    private func openPieceHash(_ attributes: [String: String]) {
        guard pieces?.kind != nil, let length = pieces?.length else { return }
        let count = (pieces?.count ?? 0) + 1
        pieces?.count = count
        guard count <= limits.pieces else {
            return fail("the pieces have more than the \(limits.pieces) hashes accepted")
        }
        if let size = file?.size, Int64(count) > Self.pieceCount(size: size, length: length) {
            let needed = Self.pieceCount(size: size, length: length)
            return fail(
                "the pieces have more hashes than the \(needed) that \(size) bytes in pieces of \(length) need")
        }
        if let text = attributes["piece"] {
            guard let index = Metalink.decimal(text, max: Int64(limits.pieces) - 1) else {
                return fail("the piece index `\(Metalink.shown(text))` is not a number below \(limits.pieces)")
            }
            pieces?.indexes.append(Int(index))
        }
    }

    private func closePieceHash(_ value: String) {
        guard let kind = pieces?.kind else { return }
        guard let digest = Metalink.bytes(hex: value, count: kind.byteCount) else {
            return fail(
                "piece hash \(pieces?.count ?? 0) `\(Metalink.shown(value))` is not \(2 * kind.byteCount) hex digits (\(kind.rawValue))"
            )
        }
        pieces?.hashes.append(digest)
    }

    private func closePieces() {
        guard let draft = pieces else { return }
        pieces = nil
        guard let kind = draft.kind else { return }
        guard !draft.hashes.isEmpty else { return fail("the \(kind.rawValue) pieces have no hash") }
        var hashes = draft.hashes
        if !draft.indexes.isEmpty {
            guard draft.indexes.count == hashes.count else {
                return fail("some piece hashes have a `piece` index and some have none")
            }
            var slots = [[UInt8]?](repeating: nil, count: hashes.count)
            for (index, digest) in zip(draft.indexes, draft.hashes) {
                guard index < slots.count, slots[index] == nil else {
                    return fail(
                        "piece index \(index) is \(index < slots.count ? "given twice" : "out of range"): the indexes of \(slots.count) piece hashes are 0 to \(slots.count - 1), each once"
                    )
                }
                slots[index] = digest
            }
            hashes = slots.compactMap { $0 }
        }
        guard file?.pieces[kind] == nil else {
            return fail("the file has two `pieces` elements of type \(kind.rawValue)")
        }
        file?.pieces[kind] = Metalink.Pieces(kind: kind, length: draft.length, hashes: hashes)
    }

    private func openURL(_ attributes: [String: String]) {
        file?.urlElements += 1
        guard let count = file?.urlElements, count <= limits.urlsPerFile else {
            return fail("the file lists more than the \(limits.urlsPerFile) URLs accepted")
        }
        urlAttributes = attributes
    }

    private func closeURL(_ url: String) {
        // v3 lists torrents as `url type="bittorrent"`; v4 puts them in `metaurl`, which is ignored.
        if isV3, let type = urlAttributes["type"], !["http", "https"].contains(type.lowercased()) { return }
        guard Metalink.isFetchableURL(url) else { return }
        var priority: Int?
        if isV3, let text = urlAttributes["preference"] {
            guard let preference = Metalink.decimal(text, max: 100) else {
                return fail("the url preference `\(Metalink.shown(text))` is not a number from 0 to 100")
            }
            priority = 101 - Int(preference)
        } else if !isV3, let text = urlAttributes["priority"] {
            guard let value = Metalink.decimal(text, max: 999_999), value >= 1 else {
                return fail("the url priority `\(Metalink.shown(text))` is not a number from 1 to 999999")
            }
            priority = Int(value)
        }
        let location = urlAttributes["location"].flatMap(Metalink.countryCode)
        file?.sources.append(Metalink.Source(url: url, priority: priority, location: location))
    }

    private func closeFile() {
        guard let draft = file else { return }
        file = nil
        let pieces = draft.pieces[.sha256] ?? draft.pieces[.sha1]
        if let pieces, let size = draft.size {
            let needed = Self.pieceCount(size: size, length: pieces.length)
            guard Int64(pieces.hashes.count) == needed else {
                return fail(
                    "the file `\(Metalink.shown(draft.name))` has \(pieces.hashes.count) piece hashes where \(size) bytes in pieces of \(pieces.length) need \(needed)"
                )
            }
        }
        var seen: Set<String> = []
        let sources = Metalink.sortedByPriority(draft.sources, \.priority).filter { seen.insert($0.url).inserted }
        files.append(
            Metalink.File(name: draft.name, size: draft.size, hashes: draft.hashes, pieces: pieces, sources: sources))
    }

    // MARK: - Values

    /// `text` without the XML white space (space, tab, CR, LF) around it.
    private static func trimmed(_ text: String) -> String {
        let isSpace = { (c: UInt8) in c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
        guard let first = text.utf8.firstIndex(where: { !isSpace($0) }),
            let last = text.utf8.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(Substring(text.utf8[first...last]))
    }

    /// Pieces of `length` bytes in `size` bytes: at least one (an empty file has one empty piece).
    private static func pieceCount(size: Int64, length: Int64) -> Int64 {
        max(1, (size + length - 1) / length)
    }

    /// Why `name` cannot be a file name here, or nil.
    private static func problem(name: String) -> String? {
        let shown = Metalink.shown(name)
        if name.isEmpty { return "a `file` element has no `name`" }
        if name.contains(where: { $0 == "/" || $0 == "\\" }) {
            return "the file name `\(shown)` has a directory in it; file names with directories are not supported"
        }
        if name.unicodeScalars.contains(where: Metalink.isControl) {
            return "the file name `\(shown)` has a control character in it"
        }
        // Bidirectional overrides and other invisible format characters make `evil\u{202E}gnp.exe` show as a .png.
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .format }) {
            return
                "the file name `\(shown)` has an invisible formatting character (such as a bidirectional override) in it"
        }
        if name.hasPrefix(".") {
            return "the file name `\(shown)` starts with a dot (`.`, `..` and hidden files are refused)"
        }
        if name.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) {
            return "the file name `\(shown)` is only blanks"
        }
        // Room for the partial's names beside it (`NAME.mirror-part.pieces`) within a file name's 255 bytes.
        let longest = 255 - ".mirror-part.pieces".utf8.count
        if name.utf8.count > longest { return "the file name `\(shown)` is longer than \(longest) bytes" }
        return nil
    }

    /// A few words for a libxml2 error code (`xmlParserErrors`).
    private static func describe(_ code: Int) -> String {
        let words =
            switch code {
            case 4: "there is no element"
            case 5: "the document ends before its root element does, or goes on after it"
            case 9: "a character XML does not allow"
            case 22, 23: "an `&` that starts no entity reference (write `&amp;`)"
            case 26, 27: "a reference to an undeclared entity"
            case 33, 34, 38...41: "a malformed attribute"
            case 42, 203: "an attribute given twice"
            case 45: "a comment that does not end"
            case 63: "a CDATA section that does not end"
            case 65, 68, 72...75, 77: "a malformed tag"
            case 76: "an end tag that does not match its start tag"
            case 85, 86: "content after the root element"
            case 201: "an undeclared namespace prefix"
            default: "libxml2 error"
            }
        return "\(words), code \(code)"
    }
}
