import GRDB
import MeterwiseClient
import Policy

/// The job store keeps `JobRecord`s as rows of the `job` table, columns named by its `CodingKeys`.
extension JobRecord: FetchableRecord, PersistableRecord {
    public static var databaseTableName: String { "job" }
}

extension JobRecord {
    /// What the policy needs to know of the job.
    public var jobInfo: JobInfo {
        // A declared size is a hint until the server says the real one.
        JobInfo(
            id: id, size: policySize, priority: priority, tags: tags, allowMetered: allowMetered,
            allowRoaming: allowRoaming, owner: ownerUID)
    }
}
