//! Browser sessions as the web layer keeps them in a cookie: start, load, move to a new id, sign
//! in, end. The rules (idle and absolute lifetimes, regeneration) are `session`'s.

use super::Fault;
use crate::session::{NewSession, Session, Sessions};

#[derive(Clone)]
pub struct Browsers {
    sessions: Sessions,
}

impl Browsers {
    pub fn new(sessions: Sessions) -> Self {
        Self { sessions }
    }

    pub async fn start(&self) -> Result<NewSession, Fault> {
        Ok(self.sessions.create().await?)
    }

    /// The live session a cookie names, if any.
    pub async fn load(&self, cookie_value: &str) -> Result<Option<Session>, Fault> {
        Ok(self.sessions.load(cookie_value).await?)
    }

    /// The session under a new id; `None` when it ended meanwhile.
    pub async fn regenerate(&self, session_id: i64) -> Result<Option<NewSession>, Fault> {
        Ok(self.sessions.regenerate(session_id).await?)
    }

    /// The session signed in as `user_id`, under a new id; `None` when it ended meanwhile.
    pub async fn sign_in(&self, session_id: i64, user_id: i64) -> Result<Option<NewSession>, Fault> {
        Ok(self.sessions.sign_in(session_id, user_id).await?)
    }

    pub async fn end(&self, session_id: i64) -> Result<(), Fault> {
        Ok(self.sessions.end(session_id).await?)
    }
}
