//! The GC's second duty: expired resumable uploads (abandoned, terminated while the store
//! failed, or of a disabled sender). Their bytes go first, then the row; each is a ledger item
//! of its own subject, "upload".

use super::{ShareGc, gc::failure_class};
use crate::maintenance::{Outcome, Target};

impl ShareGc {
    /// Deletes the files and rows of these expired uploads; a failed delete leaves the row for
    /// the next pass. Answers how many were collected and how many failed.
    pub(super) async fn collect_uploads(
        &self,
        run_id: i64,
        expired: Vec<(i64, String)>,
    ) -> Result<(u32, u32), sqlx::Error> {
        let (mut collected, mut failed) = (0, 0);
        for (id, key) in expired {
            let (outcome, reason) = match crate::uploads::delete_files(self.store.as_ref(), &key).await {
                Ok(()) if self.uploads.delete_expired(id).await? => {
                    collected += 1;
                    (Outcome::Deleted, None)
                }
                Ok(()) => (Outcome::AlreadyGone, None),
                Err(error) => {
                    tracing::warn!(upload_id = id, %error, "could not delete an expired upload's file");
                    failed += 1;
                    (Outcome::Failed, Some(failure_class(&error)))
                }
            };
            // As it goes, like the shares' items.
            self.ledger.record(run_id, Target::Upload, &[(id, outcome, reason.as_deref())]).await?;
        }
        Ok((collected, failed))
    }
}
