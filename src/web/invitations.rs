//! The team page's invitations still waiting (admins only): send one again with a new link, or
//! cancel it. Each leads back to the team page with a notice, so a reload repeats nothing.

use poem::{
    Response, Route, handler, post,
    web::{Data, Path},
};

use super::{Admin, AppError, AppState, paths, see_other};

/// The changes to one waiting invitation.
pub fn routes(route: Route) -> Route {
    route.at("/team/invitations/:id/resend", post(resend)).at("/team/invitations/:id/cancel", post(cancel))
}

/// POST /team/invitations/{id}/resend: mails a new link; the earlier one stops working.
#[handler]
pub async fn resend(Path(id): Path<i64>, state: Data<&AppState>, Admin(user): Admin) -> Result<Response, AppError> {
    if state.services.accounts.resend_invitation(&user, id).await? {
        return Ok(see_other(&paths::team_invitation_done("resent", id)));
    }
    Ok(see_other(paths::TEAM))
}

/// POST /team/invitations/{id}/cancel: the link stops working.
#[handler]
pub async fn cancel(Path(id): Path<i64>, state: Data<&AppState>, Admin(user): Admin) -> Result<Response, AppError> {
    if state.services.accounts.cancel_invitation(&user, id).await? {
        return Ok(see_other(&paths::team_done("cancelled")));
    }
    Ok(see_other(paths::TEAM))
}
