//! Signing out. (Signing in arrives with the sender dashboard.)

use poem::{Response, handler, http::StatusCode, web::Data};

use super::{AppError, middleware::SessionHandle};

/// Ends this browser's session (and with it any download grants) and goes to the start page.
#[handler]
pub async fn logout(session: Data<&SessionHandle>) -> Result<Response, AppError> {
    session.end().await?;
    Ok(Response::builder().status(StatusCode::SEE_OTHER).header("Location", "/").finish())
}
