/// Values that many jobs share (a job's class, a decision), each kept once and referred to by a small
/// number. Counted: a value no job refers to any more is dropped and its number used again, so the table
/// stays as small as the variety in use, however many jobs come and go.
struct InternTable<Value: Hashable & Sendable>: Sendable {
    private var values: [Value?] = []
    private var users: [Int32] = []
    private var numbers: [Value: Int32] = [:]
    private var unused: [Int32] = []

    /// The number of `value` if some job refers to it now.
    func number(of value: Value) -> Int32? { numbers[value] }

    subscript(number: Int32) -> Value {
        guard let value = values[Int(number)] else {
            preconditionFailure("InternTable: number \(number) is not in use")
        }
        return value
    }

    /// The number of `value`, counting one more user of it.
    mutating func acquire(_ value: Value) -> Int32 {
        if let number = numbers[value] {
            users[Int(number)] += 1
            return number
        }
        let number: Int32
        if let reused = unused.popLast() {
            number = reused
            values[Int(number)] = value
            users[Int(number)] = 1
        } else {
            number = Int32(values.count)
            values.append(value)
            users.append(1)
        }
        numbers[value] = number
        return number
    }

    /// One more user of a value already in use, by its number (no hashing).
    mutating func retain(_ number: Int32) {
        precondition(values[Int(number)] != nil, "InternTable: number \(number) is not in use")
        users[Int(number)] += 1
    }

    /// One user fewer of `number`; the value goes when it has none.
    mutating func release(_ number: Int32) {
        let slot = Int(number)
        users[slot] -= 1
        guard users[slot] == 0, let value = values[slot] else { return }
        values[slot] = nil
        numbers[value] = nil
        unused.append(number)
    }

    /// Values in use.
    var count: Int { numbers.count }
}
