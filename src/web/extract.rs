//! Extractors for what handlers would otherwise repeat in their first lines: the request's
//! context, the signed-in sender, the signed-in admin, and the layout's context. A refusal here is
//! the same `AppError` the handler would have answered, so the error page does not change.

use std::net::IpAddr;

use poem::{FromRequest, Request, RequestBody};

use super::{
    AppError, AppState, Chrome,
    middleware::{ClientAddr, SessionHandle},
};
use crate::accounts::User;

/// What most handlers take together: the app, the layout's context, the browser's session and
/// the client's address, and the request itself for the rest.
pub struct Context<'a> {
    pub state: &'a AppState,
    /// The layout's context as it stands when the handler starts. A handler that signs in or out
    /// builds the page after it with `Chrome::for_request`, so the header matches the new state.
    pub c: Chrome,
    pub session: &'a SessionHandle,
    /// The address the request is attributed to (rate limits, logs).
    pub client: IpAddr,
    pub req: &'a Request,
}

impl<'a> FromRequest<'a> for Context<'a> {
    async fn from_request(req: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        let missing = |what| AppError::Internal(anyhow::anyhow!("no {what} on the request"));
        Ok(Self {
            state: req.data::<AppState>().ok_or_else(|| missing("app state"))?,
            c: Chrome::for_request(req),
            session: req.data::<SessionHandle>().ok_or_else(|| missing("session"))?,
            client: req.data::<ClientAddr>().ok_or_else(|| missing("client address"))?.0,
            req,
        })
    }
}

/// The signed-in, active sender of this request; anyone else is sent to the sign-in page.
pub struct SignedIn(pub User);

impl<'a> FromRequest<'a> for SignedIn {
    async fn from_request(req: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        let session = req.extensions().get::<SessionHandle>().and_then(SessionHandle::current);
        let state = req.data::<AppState>().ok_or_else(|| AppError::Internal(anyhow::anyhow!("no app state")))?;
        let user = state.services.accounts.signed_in(session.as_ref()).await.map_err(AppError::from)?;
        Ok(Self(user.ok_or(AppError::SignInRequired)?))
    }
}

/// The signed-in admin. For anyone else the admin pages do not exist: 404, like any unknown path.
pub struct Admin(pub User);

impl<'a> FromRequest<'a> for Admin {
    async fn from_request(req: &'a Request, body: &mut RequestBody) -> poem::Result<Self> {
        let SignedIn(user) = SignedIn::from_request(req, body).await?;
        if !user.is_admin() {
            return Err(AppError::NotFound("admin page for a non-admin").into());
        }
        Ok(Self(user))
    }
}

/// The layout's context as it stands when the handler starts. A handler that signs in or out
/// first builds its own with `Chrome::for_request`, so the header matches the new state.
impl<'a> FromRequest<'a> for Chrome {
    async fn from_request(req: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        Ok(Self::for_request(req))
    }
}
