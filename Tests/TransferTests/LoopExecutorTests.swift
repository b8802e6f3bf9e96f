import AsyncHTTPClient
import NIOCore
import NIOPosix
import RangeServer
import Testing

@testable import Transfer

/// Segments' tasks run on the shared event loops (`LoopExecutor`), so a body part is taken where it was read.
struct LoopExecutorTests {
    @Test func aTaskThatPrefersALoopRunsOnItAcrossSuspensions() async throws {
        for index in 0..<4 {
            let executor = LoopExecutor.forWorker(index)
            let stayed = await Task(executorPreference: executor) { () -> [Bool] in
                var seen = [executor.loop.inEventLoop]
                for _ in 0..<3 {
                    try? await Task.sleep(for: .milliseconds(5))
                    seen.append(executor.loop.inEventLoop)
                    await Task.yield()
                    seen.append(executor.loop.inEventLoop)
                }
                return seen
            }.value
            #expect(stayed.allSatisfy { $0 }, "worker \(index) left its loop: \(stayed)")
        }
        // Workers spread over every loop of the shared group.
        let loops = Set((0..<LoopExecutor.shared.count).map { ObjectIdentifier(LoopExecutor.forWorker($0).loop) })
        #expect(loops.count == LoopExecutor.shared.count)
    }

    @Test func aBodyIsTakenOnTheLoopAndItsConnectionOpensThere() async throws {
        let content = RangeContent.generated(size: 4 << 20, seed: 81)
        let server = try await RangeServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { Task { try? await client.shutdown() } }
        let executor = LoopExecutor.forWorker(1)
        let (bytes, onLoop, parts) = try await Task(executorPreference: executor) {
            () async throws -> (Int, Int, Int) in
            // `any()` is the caller's loop: the request prefers it for its connection.
            #expect(MultiThreadedEventLoopGroup.singleton.any() === executor.loop)
            let response = try await client.execute(HTTPClientRequest(url: server.url()), timeout: .seconds(10))
            var (bytes, onLoop, parts) = (0, 0, 0)
            for try await part in response.body {
                bytes += part.readableBytes
                parts += 1
                if executor.loop.inEventLoop { onLoop += 1 }
            }
            return (bytes, onLoop, parts)
        }.value
        #expect(bytes == 4 << 20)
        #expect(parts > 0 && onLoop == parts, "\(onLoop) of \(parts) parts taken on the loop")
    }

    @Test func aSleepOnALoopStaysOnItAndEndsAtACancel() async throws {
        let executor = LoopExecutor.forWorker(0)
        let (slept, stayed) = await Task(executorPreference: executor) { () -> (Duration, Bool) in
            let begun = ContinuousClock.now
            try? await LoopExecutor.sleep(for: .milliseconds(60))
            return (ContinuousClock.now - begun, executor.loop.inEventLoop)
        }.value
        #expect(slept >= .milliseconds(60) && slept < .seconds(2), "slept \(slept)")
        #expect(stayed)
        // A long sleep ends as soon as its task is cancelled, by throwing.
        let long = Task(executorPreference: executor) { () -> (threw: Bool, after: Duration) in
            let begun = ContinuousClock.now
            do {
                try await LoopExecutor.sleep(for: .seconds(30))
                return (false, ContinuousClock.now - begun)
            } catch {
                return (true, ContinuousClock.now - begun)
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        long.cancel()
        let ended = await long.value
        #expect(ended.threw && ended.after < .seconds(5), "\(ended)")
        // Off the loops it is `Task.sleep`.
        let begun = ContinuousClock.now
        try await LoopExecutor.sleep(for: .milliseconds(20))
        #expect(ContinuousClock.now - begun >= .milliseconds(20))
    }
}
