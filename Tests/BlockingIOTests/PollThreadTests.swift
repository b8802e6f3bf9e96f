import BlockingIO
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The one primitive for blocking sources: its thread ends, and every descriptor it opened is closed, when
/// the consumer is cancelled or goes away; it delivers what its body yields, in order.
@Suite(.serialized) struct PollThreadTests {
    /// The process's open descriptors and what each is (`pipe:[123]`, a path...).
    static func openDescriptors() -> [Int32: String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var open: [Int32: String] = [:]
        for name in names {
            guard let fd = Int32(name),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")
            else { continue }
            open[fd] = target
        }
        return open
    }

    /// The descriptors open now that were not open (as the same file) `before`; not the ones the Swift
    /// runtime creates when it first needs them (its timerfd and eventfd for `Task.sleep`: `anon_inode:`).
    static func opened(since before: [Int32: String]) -> [Int32: String] {
        openDescriptors().filter {
            before[$0.key] != $0.value && !$0.value.hasPrefix("/proc/") && !$0.value.hasPrefix("anon_inode:")
        }
    }

    /// The process's threads with this name (/proc/self/task/*/comm).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter {
            (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// A pipe whose read end the body waits on (the source), closed by the test.
    struct Pipe {
        let read: Int32
        let write: Int32
        init() throws {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
            (read, write) = (fds[0], fds[1])
        }
        func send(_ byte: UInt8) {
            var byte = byte
            _ = Glibc.write(write, &byte, 1)
        }
        func close() {
            _ = Glibc.close(read)
            _ = Glibc.close(write)
        }
    }

    /// A body that yields "started", then each byte the pipe brings, until stopped.
    static func bytes(from source: Pipe, named name: String) -> AsyncStream<Int> {
        PollThread.stream(of: Int.self, named: name) { waiter in
            waiter.yield(-1)
            var buffer = [UInt8](repeating: 0, count: 64)
            while case .ready = (try? waiter.wait(for: [PollDescriptor(source.read)])) ?? .stopped {
                let count = Glibc.read(source.read, &buffer, buffer.count)
                guard count > 0 else { return }
                for byte in buffer.prefix(count) { waiter.yield(Int(byte)) }
            }
        }
    }

    @Test func cancellingTheConsumerEndsTheThreadAndClosesItsDescriptors() async throws {
        let source = try Pipe()
        defer { source.close() }
        let name = "mw-test-cancel"
        let before = Self.openDescriptors()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            for await value in Self.bytes(from: source, named: name) where value == -1 { start.yield() }
        }
        for await _ in started { break }
        #expect(Self.threads(named: name) == 1, "the body runs on a thread of its own, named")
        let wakePipe = Self.opened(since: before).filter { $0.value.hasPrefix("pipe:") }
        #expect(wakePipe.count == 2, "the wake pipe is open while the thread waits: \(wakePipe)")
        consumer.cancel()
        await consumer.value
        #expect(await eventually { Self.threads(named: name) == 0 }, "the thread did not end on cancellation")
        #expect(
            await eventually { Self.opened(since: before).isEmpty }, "descriptors leaked: \(Self.opened(since: before))"
        )
    }

    @Test func droppingTheStreamEndsTheThreadAndClosesItsDescriptors() async throws {
        let source = try Pipe()
        defer { source.close() }
        let name = "mw-test-drop"
        let before = Self.openDescriptors()
        do {
            let stream = Self.bytes(from: source, named: name)
            for await value in stream where value == -1 { break }
            #expect(Self.threads(named: name) == 1)
            #expect(Self.opened(since: before).filter { $0.value.hasPrefix("pipe:") }.count == 2)
        }
        #expect(
            await eventually { Self.threads(named: name) == 0 }, "the thread did not end when the consumer went away")
        #expect(
            await eventually { Self.opened(since: before).isEmpty }, "descriptors leaked: \(Self.opened(since: before))"
        )
    }

    @Test func everyEventIsDeliveredInOrder() async throws {
        let source = try Pipe()
        defer { source.close() }
        let stream = Self.bytes(from: source, named: "mw-test-order")
        let sent = (0..<600).map { UInt8($0 % 251) }
        var received: [Int] = []
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == -1)
        // Written in bursts while the thread reads: some bytes come one read at a time, some many at once.
        for (index, byte) in sent.enumerated() {
            source.send(byte)
            if index % 50 == 49 {
                while received.count <= index, let value = await iterator.next() { received.append(value) }
            }
        }
        #expect(received == sent.map(Int.init))
    }

    @Test func aThrowingBodyEndsTheStreamWithItsErrorAndATimeoutIsSaid() async throws {
        struct Broken: Error {}
        let name = "mw-test-throw"
        let before = Self.openDescriptors()
        let stream = PollThread.throwingStream(of: String.self, named: name) { waiter in
            let wake = try waiter.wait(for: [], timeout: .milliseconds(1))
            waiter.yield(wake == .timedOut ? "timed out" : "\(wake)")
            throw Broken()
        }
        var values: [String] = []
        await #expect(throws: Broken.self) {
            for try await value in stream { values.append(value) }
        }
        #expect(values == ["timed out"])
        #expect(await eventually { Self.threads(named: name) == 0 && Self.opened(since: before).isEmpty })
    }

    @Test func aSleepEndsAtOnceWhenTheConsumerGoesAway() async throws {
        let name = "mw-test-sleep"
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
        let started = ContinuousClock.now
        do {
            let source = PollThread.stream(of: Int.self, named: name) { waiter in
                waiter.yield(0)
                continuation.yield(waiter.sleep(for: .seconds(30)))
                continuation.finish()
            }
            for await _ in source { break }
        }
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == true, "the sleep did not say it was stopped")
        #expect(ContinuousClock.now - started < .seconds(20), "the sleep ran its course instead of ending")
    }
}
