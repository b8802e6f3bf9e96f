import AsyncHTTPClient
import CFileCalls
import Crypto
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One delta download (docs/delta.md): read the control file, find the target's blocks in the partial
/// file and the seeds, copy them, fetch the rest with ranged requests, check the SHA-1 and rename. The
/// partial file is its own checkpoint: a resumed run finds every complete block in place.
struct DeltaRun: Sendable {
    /// How the delta ended: done, or not possible here (the caller downloads the whole file, saying why).
    enum Ending: Sendable {
        case done(DownloadOutcome)
        case fallback(String)
    }

    let download: Download
    let client: HTTPClient
    let forwarder: HTTPClient?
    let source: DeltaSource
    var request: DownloadRequest { download.request }

    /// The control file's largest size (4 Mi blocks of 20 bytes, and the header).
    static let maxControlBytes = 100 << 20

    func perform() async throws(TransferError) -> Ending {
        if let problem = DownloadURL.problem(request.url) { throw TransferError(.invalidURL, problem + ".") }
        let directory = try OutputDirectory.open(holding: request.destination, identity: request.identity)
        try directory.checkWritable()
        let names = OutputNames(destination: request.destination)
        // The control file.
        let location = source.controlLocation(for: request.url)
        let hadControlCache = directory.exists(names.controlCache)
        let controlBytes: [UInt8]
        switch try await readControl(location, directory: directory, names: names) {
        case .bytes(let bytes): controlBytes = bytes
        case .absent(let why): return noDelta(why, directory, names)
        }
        let control = try ZsyncControl.parse(controlBytes, source: RedactedURL.redact(location))
        // The target: its length must be the control file's, and ranges must work.
        let target: Target
        switch try await probe() {
        case .target(let found): target = found
        case .unusable(let why): return noDelta(why, directory, names)
        }
        guard target.total == control.length else {
            return noDelta(
                "the control file describes \(control.length) bytes but the server has \(target.total): it is for another version",
                directory, names)
        }
        // The partial file, locked for this run.
        let partial: LockedPartial
        do throws(TransferError) {
            partial = try openPartial(directory, names)
        } catch {
            // Refused: the copy of the control file this run made goes too, unless a delta of the same output
            // runs (it is that run's).
            if error.code == .outputBusy, !hadControlCache, !LockedPartial.isHeld(names.deltaPartial, in: directory) {
                try? directory.remove(names.controlCache)
            }
            throw error
        }
        defer { close(partial.fd) }
        guard ftruncate(partial.fd, off_t(control.length)) == 0 else {
            throw FileIO.error("size \(directory.display(names.deltaPartial))")
        }
        let map = BlockMap(blocks: control.blockCount)
        let seeds = try seedFiles(directory: directory, names: names)
        defer { for seed in seeds { close(seed.fd) } }
        let index = control.blockCount > 0 ? try BlockIndex(control) : nil
        if let index {
            if !partial.created {
                let n = await index.scan(
                    fd: partial.fd, length: control.length, seed: 0, mode: .inPlace, found: map, progress: { _ in })
                if n > 0 { download.sink.yield(.delta(.resumed(blocks: n, of: control.blockCount))) }
            }
            for (number, seed) in seeds.enumerated() where map.foundCount < control.blockCount {
                let before = map.foundCount
                let started = ContinuousClock.now
                let sink = download.sink
                let path = seed.path
                let size = seed.size
                _ = await index.scan(
                    fd: seed.fd, length: seed.size, seed: UInt16(number + 1), mode: .rolling, found: map,
                    progress: { at in sink.yield(.delta(.scanning(seed: path, scanned: at, size: size))) })
                if Task.isCancelled { return .done(.paused) }
                let found = map.foundCount - before
                let seconds = (ContinuousClock.now - started).secondsDouble
                download.sink.yield(
                    .delta(.scanned(seed: seed.path, blocks: found, of: control.blockCount, seconds: seconds)))
            }
        }
        let plan = DeltaPlan(control: control, found: map.entries)
        try copyBlocks(plan, seeds: seeds, into: partial.fd)
        let reused = plan.bytesReused
        download.sink.yield(.delta(.planned(toFetch: plan.bytesToFetch, reused: reused, total: control.length)))
        // The policy decides on what is left to fetch, not on the file's length.
        if let admit = request.admitDelta, !(await admit(plan.bytesToFetch, control.length)) { return .done(.paused) }
        download.sink.yield(
            .started(
                totalBytes: control.length, resumedBytes: reused,
                segments: request.segmentCount(total: plan.bytesToFetch)))
        let fetch = DeltaFetch(
            run: self, index: index, target: target, total: control.length, fd: partial.fd, reused: reused)
        switch try await fetch.run(plan: plan) {
        case .stopped(.pause):
            download.sink.yield(.paused(fetch.progress()))
            download.setPausedProgress(fetch.progress())
            return .done(.paused)
        case .stopped(.cancel):
            try? directory.remove(names.deltaPartial)
            try? directory.remove(names.controlCache)
            return .done(.cancelled)
        case .complete:
            break
        }
        // The whole file's SHA-1 is the control file's word for the target.
        let digests = Self.digests(fd: partial.fd, length: control.length, sha256: request.wantsSHA256)
        guard digests.sha1 == control.sha1 else {
            try? directory.remove(names.deltaPartial)
            try? directory.remove(names.controlCache)
            // Every block matched its checksums, so the control file's own SHA-1 disagrees with them: it is not
            // the file the server has. A whole download could not be checked against it either.
            throw TransferError(
                .checksumMismatch,
                "The assembled file's SHA-1 is \(digests.sha1), not the control file's \(control.sha1), though every block matched its checksums: the control file does not describe the server's file. The partial file was removed; make the control file again with zsyncmake, or download without --zsync."
            )
        }
        if let expected = request.expectedSHA256, digests.sha256 != expected {
            throw TransferError(
                .checksumMismatch,
                "The file's sha256 is \(digests.sha256 ?? "-"), not the expected \(expected); it matches the control file, so the control file and --sha256 disagree. The partial file is kept."
            )
        }
        // The new version keeps the mode of the one it replaces (an AppImage stays executable); a new file gets
        // the usual permissions. The partial was private to its owner.
        let mode = existingMode(directory, names.final) ?? (0o666 & ~FileIO.processUmask)
        guard fdatasync(partial.fd) == 0 else { throw FileIO.error("write \(directory.display(names.deltaPartial))") }
        try directory.publish(partial.fd, names.deltaPartial, as: names.final, mode: mode, replace: true)
        try? directory.remove(names.controlCache)
        directory.sync()
        let counts = fetch.counts()
        return .done(
            .completed(
                DownloadResult(
                    path: request.destination, sha256: request.wantsSHA256 ? digests.sha256 : nil,
                    totalBytes: control.length, bytesFetched: counts.fetched,
                    refetchedBytes: DownloadResult.refetched(
                        fetched: counts.fetched, discarded: counts.discarded, total: control.length, resumed: reused),
                    resumedBytes: reused, discardedBytes: counts.discarded)))
    }

    /// No delta here: the copy of the control file goes (the whole download does not need it).
    func noDelta(_ why: String, _ directory: OutputDirectory, _ names: OutputNames) -> Ending {
        try? directory.remove(names.controlCache)
        return .fallback(why)
    }

    // MARK: - The control file

    enum ControlAnswer { case bytes([UInt8]), absent(String) }

    func readControl(_ location: String, directory: OutputDirectory, names: OutputNames) async throws(TransferError)
        -> ControlAnswer
    {
        guard DeltaSource.isRemote(location) else {
            let path = location.hasPrefix("file://") ? String(location.dropFirst(7)) : location
            let fd = try request.identity.perform { () throws(TransferError) -> Int32 in
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else {
                    throw TransferError(
                        errno == EACCES || errno == EPERM ? .permission : .controlFile,
                        "Could not open the control file \(path): \(String(cString: strerror(errno))). Give the path of the .zsync file zsyncmake wrote."
                    )
                }
                return fd
            }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                throw TransferError(
                    .controlFile, "\(path) is not a regular file; give the control file zsyncmake wrote.")
            }
            guard let bytes = FileIO.readAll(fd: fd, limit: Self.maxControlBytes + 1) else {
                throw FileIO.error("read the control file \(path)")
            }
            guard bytes.count <= Self.maxControlBytes else {
                throw TransferError(.controlFile, "\(path) is larger than 100 MiB; it is not a control file.")
            }
            return .bytes(bytes)
        }
        // A resumed delta asks whether the control file it kept is still the server's: a 304 costs a few hundred
        // bytes where the file is 2 MiB per GiB.
        let cache = ControlCache.read(directory, names.controlCache)
        let response = try await get(
            location, range: nil, validators: nil,
            headers: cache.map { [("If-None-Match", $0.etag)] } ?? [])
        let status = Int(response.response.status.code)
        if status == 304, let cache { return .bytes(cache.bytes) }
        guard status == 200 else {
            if status == 404 || status == 410 || status == 403 {
                return .absent("there is no control file at \(RedactedURL.redact(location)) (HTTP \(status))")
            }
            throw TransferError(
                .httpStatus,
                "The control file \(RedactedURL.redact(location)) answered HTTP \(status); try again later.")
        }
        var bytes: [UInt8] = []
        do {
            for try await buffer in response.response.body {
                guard bytes.count + buffer.readableBytes <= Self.maxControlBytes else {
                    throw TransferError(
                        .controlFile,
                        "\(RedactedURL.redact(location)) is larger than 100 MiB; it is not a control file.")
                }
                bytes += buffer.readableBytesView
            }
        } catch let error as TransferError {
            throw error
        } catch {
            throw TransferError(
                .retriesExhausted,
                "Reading the control file \(RedactedURL.redact(location)) failed: \(error); try again.")
        }
        let etag = Validators(etag: response.response.headers.first(name: "ETag"), lastModified: nil).etag
        if let etag { ControlCache.write(directory, names.controlCache, etag: etag, bytes: bytes) }
        return .bytes(bytes)
    }

    // MARK: - The target

    struct Target: Sendable {
        /// The URL after redirects: where the ranges are asked.
        var url: String
        var total: Int64
        var validators: Validators
    }

    enum Probe { case target(Target), unusable(String) }

    /// Asks for the target's first byte: its length, validators and whether ranges work.
    func probe() async throws(TransferError) -> Probe {
        let answer = try await get(request.url, range: "bytes=0-0", validators: nil)
        let response = answer.response
        let status = Int(response.status.code)
        switch status {
        case 206:
            guard let header = response.headers.first(name: "Content-Range"), let range = ContentRange(header: header),
                let total = range.total, total <= ObjectLimits.maxBytes
            else { return .unusable("the server's answer to a range request has no usable Content-Range") }
            let validators = Validators(
                etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
            return .target(Target(url: answer.url, total: total, validators: validators))
        case 200 where response.headers.first(name: "Content-Length") == "0":
            // An empty file has no byte 0 to give: nginx answers it whole.
            let validators = Validators(
                etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
            return .target(Target(url: answer.url, total: 0, validators: validators))
        case 200:
            return .unusable("the server does not answer range requests")
        case 416:
            // An empty object has no byte 0.
            if let header = response.headers.first(name: "Content-Range"),
                ContentRange.unsatisfiedTotal(header: header) == 0
            {
                return .target(Target(url: answer.url, total: 0, validators: Validators(etag: nil, lastModified: nil)))
            }
            return .unusable("the server refused a range request (416)")
        default:
            throw TransferError(
                .httpStatus, "The server answered HTTP \(status) for \(RedactedURL.redact(request.url)).")
        }
    }

    typealias Answer = RequestSender.Answer

    /// A GET of `url`, following redirects, through the proxy as the downloader does (`RequestSender`).
    func get(_ url: String, range: String?, validators: Validators?, headers: [(String, String)] = [])
        async throws(TransferError) -> Answer
    {
        try await RequestSender(download: download, client: client, forwarder: forwarder)
            .get(url, range: range, validators: validators, headers: headers)
    }

    // MARK: - Files

    func openPartial(_ directory: OutputDirectory, _ names: OutputNames) throws(TransferError) -> LockedPartial {
        try LockedPartial.open(names.deltaPartial, of: names, in: directory, sink: download.sink)
    }

    /// The permission bits of the file at `name` (no set-id bits), when there is a regular file there.
    func existingMode(_ directory: OutputDirectory, _ name: String) -> mode_t? {
        let mode = try? directory.perform { () throws(TransferError) -> mode_t? in
            var st = stat()
            guard fstatat(directory.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                return nil
            }
            return st.st_mode & 0o777
        }
        return mode ?? nil
    }

    struct Seed {
        var path: String
        var fd: Int32
        var size: Int64
    }

    /// The seeds, opened read-only with the identity's rights: the destination (an older version) first,
    /// then each `--seed`. A seed that cannot be read is skipped with a warning.
    func seedFiles(directory: OutputDirectory, names: OutputNames) throws(TransferError) -> [Seed] {
        var seeds: [Seed] = []
        var paths: [String] = []
        if directory.exists(names.final) { paths.append(request.destination) }
        paths += source.seeds
        var seen: Set<[UInt64]> = []
        for path in paths {
            let fd = try? request.identity.perform { () throws(TransferError) -> Int32 in
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else { throw FileIO.error("open \(path)") }
                return fd
            }
            guard let fd else {
                download.sink.yield(
                    .warning("Not using the seed \(path): it cannot be read by uid \(request.identity.ownerUID)."))
                continue
            }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0,
                seen.insert([UInt64(st.st_dev), UInt64(st.st_ino)]).inserted
            else {
                close(fd)
                continue
            }
            seeds.append(Seed(path: path, fd: fd, size: Int64(st.st_size)))
            if seeds.count >= Int(UInt16.max) - 1 { break }
        }
        return seeds
    }

    /// Copies the plan's runs from the seeds into the partial file, inside the kernel.
    func copyBlocks(_ plan: DeltaPlan, seeds: [Seed], into fd: Int32) throws(TransferError) {
        for copy in plan.copies {
            let seed = seeds[copy.seed - 1]
            let n = mw_copy_range(seed.fd, copy.from, fd, copy.to, copy.length)
            guard n == copy.length else { throw FileIO.error("copy blocks from \(seed.path)") }
        }
    }

    /// The SHA-1 (and sha256 when asked) of the file's first `length` bytes.
    static func digests(fd: Int32, length: Int64, sha256: Bool) -> (sha1: String, sha256: String?) {
        var sha1 = Insecure.SHA1()
        var sha2 = sha256 ? SHA256() : nil
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var at: Int64 = 0
        while at < length {
            let want = Int(min(Int64(buffer.count), length - at))
            let n = buffer.withUnsafeMutableBytes {
                FileIO.preadFully(fd: fd, UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: at)
            }
            guard n > 0 else { break }
            buffer.withUnsafeBytes {
                let part = UnsafeRawBufferPointer(rebasing: $0[0..<n])
                sha1.update(bufferPointer: part)
                sha2?.update(bufferPointer: part)
            }
            at += Int64(n)
        }
        return (sha1.finalize().hex, sha2.map { $0.finalize().hex })
    }
}

extension OutputNames {
    /// A delta download's partial file: the target's blocks at their offsets (docs/delta.md).
    var deltaPartial: String { final + ".delta-part" }
    /// The control file a delta download read, kept with its ETag until the download completes.
    var controlCache: String { final + ".delta-part.zsync" }
}
