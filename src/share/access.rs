//! Opening a share, granting after verification, and authorising a download: the three steps of
//! seed 001's ShareAccess in one place.

use super::{DownloadGrants, Share, ShareError, ShareLinks};
use crate::{otp::CodeOutcome, session::Session};

#[derive(Clone, Debug)]
pub struct ShareAccess {
    pub links: ShareLinks,
    pub grants: DownloadGrants,
}

impl ShareAccess {
    pub fn new(links: ShareLinks, grants: DownloadGrants) -> Self {
        Self { links, grants }
    }

    /// Over one pool, with grants that last `grant_ttl`.
    pub fn over(db: crate::db::Db, grant_ttl: std::time::Duration) -> Self {
        Self::new(ShareLinks::new(super::ShareRepository::new(db.clone())), DownloadGrants::new(db, grant_ttl))
    }

    /// Identifies the share; this authorises nothing.
    pub async fn open(&self, token: &str) -> Result<Share, ShareError> {
        self.links.resolve(token).await
    }

    /// Records a grant for `share` on the session, only after a successful code check. The caller
    /// regenerates the session id first (the grant is a privilege change).
    pub async fn grant_after_verification(
        &self,
        share: &Share,
        session_id: i64,
        outcome: &CodeOutcome,
    ) -> Result<(), ShareError> {
        if *outcome != CodeOutcome::Verified {
            return Err(ShareError::NotVerified);
        }
        self.grants.grant(session_id, share.id).await?;
        Ok(())
    }

    /// Resolves the token again (expiry again) and checks this session's grant for that share.
    /// The share returned, and only it, names the file to serve.
    pub async fn authorize_download(&self, token: &str, session: Option<&Session>) -> Result<Share, ShareError> {
        let share = self.links.resolve(token).await?;
        let Some(session) = session else { return Err(ShareError::NotGranted) };
        if !self.grants.is_granted(session, share.id).await? {
            return Err(ShareError::NotGranted);
        }
        Ok(share)
    }
}
