/// A `multipart/byteranges` body (RFC 9110 §14.6) read as it arrives: each part's `Content-Range` is
/// checked against the object's length, and its bytes are handed on with their offset. Pure; the caller
/// checks that the parts are the ranges it asked for.
struct MultipartByteRanges {
    /// What the body holds, in order.
    enum Event {
        /// A part begins: its range of the object.
        case part(Range<Int64>)
        /// Bytes of the current part, at `offset` in the object.
        case data(offset: Int64, bytes: UnsafeRawBufferPointer)
    }

    /// The longest part header accepted.
    static let maxHeaderBytes = 8 << 10

    private enum State {
        case header([UInt8])
        case body(next: Int64, end: Int64)
        case done
    }

    let boundary: [UInt8]
    let total: Int64
    private var state: State = .header([])

    /// The reader for a response whose `Content-Type` is `contentType`; nil when it is not
    /// `multipart/byteranges` with a boundary.
    init?(contentType: String, total: Int64) {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(" ") }
        guard parts.first?.lowercased() == "multipart/byteranges" else { return nil }
        guard let parameter = parts.dropFirst().first(where: { $0.lowercased().hasPrefix("boundary=") }) else {
            return nil
        }
        var value = parameter.dropFirst("boundary=".count)
        if value.first == "\"", value.count >= 2, value.last == "\"" { value = value.dropFirst().dropLast() }
        guard !value.isEmpty, value.utf8.count <= 200 else { return nil }
        boundary = Array(("--" + value).utf8)
        self.total = total
    }

    /// True once the closing delimiter was read.
    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Reads `bytes`, calling `emit` for each part and each run of its data.
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer, _ emit: (Event) throws(TransferError) -> Void
    ) throws(TransferError) {
        var at = 0
        while at < bytes.count {
            switch state {
            case .done:
                return  // the epilogue is ignored
            case .body(let next, let end):
                let n = Int(min(Int64(bytes.count - at), end - next))
                try emit(.data(offset: next, bytes: UnsafeRawBufferPointer(rebasing: bytes[at..<at + n])))
                at += n
                state = next + Int64(n) == end ? .header([]) : .body(next: next + Int64(n), end: end)
            case .header(var buffer):
                // Collect up to the empty line that ends the part's headers (or the closing delimiter).
                collect: while at < bytes.count {
                    buffer.append(bytes[at])
                    at += 1
                    if let ended = try headerEnded(buffer) {
                        switch ended {
                        case .closed:
                            state = .done
                        case .part(let range):
                            try emit(.part(range))
                            state = .body(next: range.lowerBound, end: range.upperBound)
                        }
                        break collect
                    }
                    guard buffer.count <= Self.maxHeaderBytes else {
                        throw Self.violation("a part's header is longer than 8 KiB")
                    }
                }
                if case .header = state { state = .header(buffer) }
            }
        }
    }

    /// Checks that the body ended where it should: after the closing delimiter.
    func finish() throws(TransferError) {
        guard isDone else { throw Self.violation("the body ended before its closing boundary") }
    }

    private enum HeaderEnd { case closed, part(Range<Int64>) }

    private func headerEnded(_ buffer: [UInt8]) throws(TransferError) -> HeaderEnd? {
        // Leading line breaks belong to the delimiter before this part.
        var start = 0
        while start < buffer.count, buffer[start] == 0x0D || buffer[start] == 0x0A { start += 1 }
        let text = buffer[start...]
        if text.count >= boundary.count + 2, text.starts(with: boundary),
            text[text.startIndex + boundary.count] == 0x2D, text[text.startIndex + boundary.count + 1] == 0x2D
        {
            return .closed
        }
        guard buffer.count >= 4, buffer.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) else { return nil }
        guard text.starts(with: boundary) else { throw Self.violation("a part does not start with the boundary") }
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\r\n").dropFirst()
        guard
            let line = lines.first(where: { $0.lowercased().hasPrefix("content-range:") }),
            let range = ContentRange(header: String(line.dropFirst("content-range:".count)))
        else { throw Self.violation("a part has no valid Content-Range") }
        guard range.total == total else {
            throw Self.violation(
                "a part's Content-Range says \(range.total.map(String.init) ?? "*") bytes, not \(total)")
        }
        return .part(range.first..<range.last + 1)
    }

    static func violation(_ what: String) -> TransferError {
        TransferError(
            .protocolViolation,
            "The server's multipart/byteranges answer is malformed: \(what). The parts before it were checked and kept; what is left is asked for again."
        )
    }
}
