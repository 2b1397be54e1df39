//! Personal API tokens on the pages: the account page's section (list, revoke, the form that
//! makes one after the current password), the page that shows a new token once, and the team
//! page's list, where an admin revokes any member's token.

use askama::Template;
use poem::{
    IntoResponse, Response, handler,
    http::header,
    web::{Html, Path},
};

use super::{AppError, AppState, Chrome, Context, SignedIn, account, form::Form, paths, see_other};
use crate::{
    accounts::{
        User,
        tokens::{Scope, Scopes, TokenEntry, TokenName, shown_prefix},
    },
    db::Timestamp,
    i18n::format::human_time,
    secret::SecretString,
    services::tokens::{CreateRefusal, NewToken, TokenExpiry},
};

/// One token as a list shows it.
pub struct TokenRow {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub scopes: Vec<&'static str>,
    pub created: String,
    pub expires: String,
    pub used: String,
    /// The owner's address (the team's list).
    pub owner: String,
    /// Why it no longer works (revoked, expired); `None`: it works.
    pub ended: Option<&'static str>,
}

impl TokenRow {
    pub fn of(c: &Chrome, entry: TokenEntry) -> Self {
        let t = &c.t.auth.tokens;
        let time = |at: Timestamp| human_time(at, c.reader());
        let expired = entry.expires_at.is_some_and(|at| at.0 <= chrono::Utc::now());
        Self {
            ended: if entry.revoked_at.is_some() {
                Some(t.revoked)
            } else if expired {
                Some(t.expired)
            } else {
                None
            },
            id: entry.id,
            prefix: shown_prefix(&entry.lookup_id),
            scopes: entry.scopes.0.iter().map(Scope::code).collect(),
            created: time(entry.created_at),
            expires: entry.expires_at.map_or_else(|| t.never_expires.to_owned(), time),
            used: entry.last_used_at.map_or_else(|| t.never_used.to_owned(), time),
            owner: entry.email,
            name: entry.name,
        }
    }
}

/// One expiry the form offers.
pub struct ExpiryChoice {
    pub code: String,
    pub label: &'static str,
}

/// What the account page shows of API tokens.
pub struct TokenSection {
    pub list: Vec<TokenRow>,
    pub scopes: [Scope; Scope::ALL.len()],
    pub expiries: Vec<ExpiryChoice>,
    /// What the last form did.
    pub done: Option<&'static str>,
    /// A refused form: the field it marks (`name`, `scope`, `password`) and why.
    pub error: Option<(&'static str, &'static str)>,
}

impl TokenSection {
    pub async fn of(c: &Chrome, state: &AppState, user: &User, done: Option<&str>) -> Result<Self, AppError> {
        let t = &c.t.auth.tokens;
        let list = state.services.tokens.list_of(user).await?.into_iter().map(|e| TokenRow::of(c, e)).collect();
        let label = |choice: TokenExpiry| match choice.code().as_str() {
            "30d" => t.expiry_30d,
            "1y" => t.expiry_1y,
            "never" => t.expiry_never,
            _ => t.expiry_90d,
        };
        let expiries =
            TokenExpiry::CHOICES.into_iter().map(|e| ExpiryChoice { code: e.code(), label: label(e) }).collect();
        let done = (done == Some("token-revoked")).then_some(t.revoked_notice);
        Ok(Self { list, scopes: Scope::ALL, expiries, done, error: None })
    }

    /// The refusal's text when it is about `field`.
    pub fn error_on(&self, field: &str) -> Option<&'static str> {
        self.error.filter(|(marked, _)| *marked == field).map(|(_, message)| message)
    }
}

#[derive(Template)]
#[template(path = "auth/token_created.html")]
struct CreatedPage {
    c: Chrome,
    token: SecretString,
    name: String,
}

/// The form's fields as a new token, or the field that is wrong and why.
fn parse_form(
    c: &Chrome,
    fields: &[(String, String)],
    expiry: TokenExpiry,
) -> Result<NewToken, (&'static str, &'static str)> {
    let t = &c.t.auth.tokens;
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str());
    let name = TokenName::parse(field("name")).ok_or(("name", t.name_invalid))?;
    let boxes = fields.iter().filter(|(k, _)| k == "scope").map(|(_, v)| v.as_str());
    let scopes = Scopes::parse(boxes).map_err(|_| ("scope", t.scopes_invalid))?;
    Ok(NewToken { name, scopes, expiry })
}

/// POST /account/tokens: the current password, then the token, shown once.
#[handler]
pub async fn create(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(fields): Form<Vec<(String, String)>>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str());
    // The select offers only valid choices: anything else is not the person's slip.
    let expiry = TokenExpiry::parse(field("expires")).map_err(|_| AppError::BadRequest("unknown token expiry"))?;
    let refusal = match parse_form(&c, &fields, expiry) {
        Err(refusal) => refusal,
        Ok(new) => {
            let name = new.name.as_str().to_owned();
            let password = SecretString::new(field("password"));
            match state.services.tokens.create_confirmed(&user, password, client, new).await {
                Ok(created) => {
                    let page = CreatedPage { c, token: created.token, name };
                    // Shown once: no browser or proxy may keep a copy of this page.
                    return Ok(Html(page.render()?).with_header(header::CACHE_CONTROL, "no-store").into_response());
                }
                Err(CreateRefusal::WrongPassword) => ("password", c.t.auth.password_current_wrong),
                Err(CreateRefusal::TooMany(retry_after)) => {
                    return Err(AppError::TooMany { reason: "token password attempts", retry_after });
                }
                Err(CreateRefusal::Fault(fault)) => return Err(fault.into()),
            }
        }
    };
    let (field, message) = refusal;
    account::account_with_token_error(c, state, session, &user, field, message).await
}

/// POST /account/tokens/{id}/revoke: the owner revokes one of theirs.
#[handler]
pub async fn revoke_own(
    Path(id): Path<i64>,
    Context { state, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    state.services.tokens.revoke_own(&user, id).await?;
    Ok(see_other(&paths::account_saved("token-revoked", "api-tokens")))
}

/// POST /team/tokens/{id}/revoke: an admin revokes a member's token.
#[handler]
pub async fn revoke_as_admin(
    Path(id): Path<i64>,
    Context { state, .. }: Context<'_>,
    super::Admin(admin): super::Admin,
) -> Result<Response, AppError> {
    state.services.tokens.revoke_as_admin(&admin, id).await?;
    Ok(see_other(&paths::team_done("token-revoked")))
}
