/// How a worker of a delta's or a mirrored download's fetch ended its turn.
enum WorkerTurn: Sendable {
    case finished
    case stop(Download.StopReason)
    case failed(TransferError)
}

extension Download {
    /// Runs `count` workers (`worker(i)`) beside the download's stop signal and a tick every 100 ms, until every
    /// worker has finished, or the first stop or failure ends them all; returns that turn, or `.finished`.
    func runWorkers(
        _ count: Int, tick: @escaping @Sendable (_ ticks: Int) -> Void,
        worker: @escaping @Sendable (_ index: Int) async -> WorkerTurn
    ) async -> WorkerTurn {
        let stopSignal = makeStopSignal()
        return await withTaskGroup(of: WorkerTurn.self) { group in
            group.addTask {
                for await reason in stopSignal { return .stop(reason) }
                return .finished
            }
            group.addTask {
                var ticks = 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    ticks += 1
                    tick(ticks)
                }
                return .finished
            }
            for index in 0..<count {
                group.addTask(executorPreference: LoopExecutor.forWorker(index)) { await worker(index) }
            }
            var left = count
            var result = WorkerTurn.finished
            while left > 0, let turn = await group.next() {
                switch turn {
                case .finished:
                    left -= 1
                case .stop, .failed:
                    result = turn
                    left = 0
                }
            }
            group.cancelAll()
            return result
        }
    }
}

extension Download {
    /// Says why the download waits (a `retrying` event), then waits `delay` or until `retryNow()`: nil when it
    /// may ask again, or what a stop asked for during the wait (`.paused`, `.cancelled`).
    func waitBeforeAsking(attempt: Int, delay: Duration, reason: String) async -> DownloadOutcome? {
        sink.yield(.retrying(attempt: attempt, delay: delay, reason: reason))
        switch await waitForWakeOrStop(delay) {
        case .pause?: return .paused
        case .cancel?: return .cancelled
        case nil: return nil
        }
    }

    /// Waits `delay`, or until `retryNow()` (a link change), or until a stop is asked: that stop's reason, or
    /// nil when the wait ended otherwise.
    func waitForWakeOrStop(_ delay: Duration) async -> StopReason? {
        let stopSignal = makeStopSignal()
        return await withTaskGroup(of: StopReason?.self) { group in
            group.addTask {
                for await reason in stopSignal { return reason }
                return nil
            }
            group.addTask {
                try? await self.wake.sleep(for: delay)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
