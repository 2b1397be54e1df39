//! The account page: who is signed in, the time zone their times are shown in, the password
//! change and the account's deletion (whose handler is in `deletion`).

use askama::Template;
use poem::{
    Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Html, Query},
};
use serde::Deserialize;

use super::tokens::TokenSection;
use super::{
    AppError, AppState, Chrome, Context, SignedIn,
    auth::{account_error, field_error},
    field_error::FieldError,
    form::Form,
    middleware::SessionHandle,
    paths, render, render_with, see_other,
};
use crate::{
    accounts::TimeZone,
    accounts::User,
    accounts::passkeys::PasskeyEntry,
    i18n::{Lang, format::human_time},
    secret::SecretString,
    services::{accounts::AccountError, passkeys::Unavailable, second_factor::FactorStatus},
};

/// The account page and its forms: time zone, password, second factor, passkeys, deletion.
pub fn routes(route: Route) -> Route {
    use super::{deletion, passkeys, second_factor, tokens};
    route
        .at("/account", get(account_page))
        .at("/account/time-zone", post(set_time_zone))
        .at("/account/mail-language", post(set_mail_lang))
        .at("/account/password", post(change_password))
        .at("/account/totp", get(second_factor::setup_page).post(second_factor::start_setup))
        .at("/account/totp/confirm", post(second_factor::confirm_setup))
        .at("/account/totp/remove", post(second_factor::remove))
        .at("/account/recovery-codes", post(second_factor::renew_codes))
        .at("/account/passkeys/options", post(passkeys::registration_options))
        .at("/account/passkeys", post(passkeys::register))
        .at("/account/passkeys/:id/remove", post(passkeys::remove))
        .at("/account/tokens", post(tokens::create))
        .at("/account/tokens/:id/revoke", post(tokens::revoke_own))
        .at("/account/delete", post(deletion::delete_own))
}

#[derive(Template)]
#[template(path = "auth/account.html")]
struct AccountPage<'a> {
    c: Chrome,
    csrf_token: String,
    user: &'a User,
    /// Every zone of the select, by name, and the one chosen.
    zones: Vec<&'static str>,
    chosen: Option<&'static str>,
    zone_saved: Option<String>,
    /// The mail language form's confirmation.
    mail_lang_saved: Option<String>,
    zone_error: FieldError,
    changed: bool,
    password_error: FieldError,
    /// Why the deletion form was refused (wrong password, …).
    delete_error: FieldError,
    /// The second factor's section (`None` on the answers of the forms that do not concern it).
    factors: Option<FactorStatus>,
    factors_removed: bool,
    factor_error: FieldError,
    /// Off (single sign-on only): no password change is offered.
    passwords: bool,
    /// The passkeys' section (`None` where the second factor's is not shown either).
    passkeys: Option<PasskeySection>,
    /// The API tokens' section (`None` on the answers of the forms that do not concern it).
    tokens: Option<TokenSection>,
}

/// One passkey as the list shows it.
struct PasskeyRow {
    id: i64,
    name: String,
    added: String,
    used: String,
}

/// What the account page shows of passkeys.
struct PasskeySection {
    /// Why passkeys cannot be used here (`None`: they can).
    off: Option<&'static str>,
    list: Vec<PasskeyRow>,
    /// What the last form did (`added`, `removed`).
    done: Option<&'static str>,
    /// A refused form: the field it marks (`name`, or `password-{id}` of a removal) and why.
    error: Option<(String, &'static str)>,
}

impl PasskeySection {
    async fn of(c: &Chrome, state: &AppState, user: &User, done: Option<&str>) -> Result<Self, AppError> {
        let p = &c.t.auth.passkeys;
        let off = state.services.passkeys.unavailable_because().await?.map(|why| match why {
            Unavailable::NoDomain => p.off_address,
            Unavailable::SingleSignOnOnly => p.off_sso,
        });
        let done = match done {
            Some("passkey") => Some(p.added),
            Some("passkey-removed") => Some(p.removed),
            _ => None,
        };
        let row = |entry: PasskeyEntry| PasskeyRow {
            added: p.added_on.replace("{date}", &human_time(entry.created_at, c.reader())),
            used: match entry.last_used_at {
                Some(at) => p.last_used.replace("{date}", &human_time(at, c.reader())),
                None => p.never_used.to_owned(),
            },
            id: entry.id,
            name: entry.name,
        };
        let list = state.services.passkeys.list(user).await?.into_iter().map(row).collect();
        Ok(Self { off, list, done, error: None })
    }

    /// The refusal's text when it is about `field`.
    fn error_on(&self, field: &str) -> Option<&'static str> {
        self.error.as_ref().filter(|(marked, _)| marked == field).map(|(_, message)| *message)
    }
}

impl<'a> AccountPage<'a> {
    fn is_chosen(&self, zone: &str) -> bool {
        self.chosen == Some(zone)
    }

    /// The page with nothing to report. The header's sign-out form gets the session's token as it
    /// is now (a password change has just replaced it).
    fn new(mut c: Chrome, session: &SessionHandle, user: &'a User) -> Self {
        let csrf_token = session.form_token();
        c.csrf_token = csrf_token.clone();
        let chosen = c.zone.map(TimeZone::name);
        Self {
            c,
            csrf_token,
            user,
            zones: TimeZone::all().map(TimeZone::name).collect(),
            chosen,
            zone_saved: None,
            mail_lang_saved: None,
            zone_error: FieldError::NONE,
            changed: false,
            password_error: FieldError::NONE,
            delete_error: FieldError::NONE,
            factors: None,
            factors_removed: false,
            factor_error: FieldError::NONE,
            passwords: true,
            passkeys: None,
            tokens: None,
        }
    }
}

#[derive(Deserialize)]
pub struct AccountQuery {
    /// Set by the redirect after a form that worked (time zone, password, …): which notice to show.
    #[serde(default)]
    saved: Option<String>,
}

/// GET /account
#[handler]
pub async fn account_page(
    Context { c, state, session, .. }: Context<'_>,
    Query(query): Query<AccountQuery>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let mut page = AccountPage::new(c, session, &user);
    page.factors = Some(state.services.factors.status(&user).await?);
    page.factors_removed = query.saved.as_deref() == Some("second-factor");
    page.changed = query.saved.as_deref() == Some("password");
    page.passkeys = Some(PasskeySection::of(&page.c, state, &user, query.saved.as_deref()).await?);
    page.passwords = state.services.sign_in_methods().await?.passwords_allowed;
    page.tokens = Some(TokenSection::of(&page.c, state, &user, query.saved.as_deref()).await?);
    if query.saved.as_deref() == Some("mail-language") {
        let t = &page.c.t.auth;
        page.mail_lang_saved = Some(t.mail_lang_saved.replace("{lang}", user.lang.text().chrome.lang_name));
    }
    if query.saved.as_deref() == Some("time-zone") {
        let t = &page.c.t.chrome;
        let zone = page.chosen.unwrap_or(t.time_zone_by_language);
        page.zone_saved = Some(t.time_zone_saved.replace("{zone}", zone));
    }
    render(&page)
}

#[derive(Deserialize)]
pub struct MailLangForm {
    #[serde(default)]
    lang: String,
}

/// POST /account/mail-language: the language of the mails about the account.
#[handler]
pub async fn set_mail_lang(
    state: Data<&AppState>,
    Form(form): Form<MailLangForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let lang = Lang::from_code(&form.lang).ok_or(AppError::BadRequest("unknown language"))?;
    state.services.accounts.set_lang(&user, lang).await?;
    Ok(see_other(&paths::account_saved("mail-language", "mail-language")))
}

#[derive(Deserialize)]
pub struct TimeZoneForm {
    #[serde(default)]
    time_zone: String,
}

/// POST /account/time-zone: stores the chosen zone (empty: follow the page language).
#[handler]
pub async fn set_time_zone(
    Context { c, state, session, .. }: Context<'_>,
    Form(form): Form<TimeZoneForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let zone = match form.time_zone.trim() {
        "" => None,
        name => match TimeZone::parse(name) {
            Some(zone) => Some(zone),
            None => {
                let mut page = AccountPage::new(c, session, &user);
                page.zone_error = FieldError::on("time_zone", page.c.t.chrome.time_zone_invalid);
                return render_with(StatusCode::BAD_REQUEST, &page);
            }
        },
    };
    state.services.accounts.set_time_zone(&user, zone).await?;
    Ok(see_other(&paths::account_saved("time-zone", "time-zone")))
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

/// POST /account/password: asks for the current password; ends every other session.
#[handler]
pub async fn change_password(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasswordForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let session_now = session.current().ok_or(AppError::SignInRequired)?;
    let (current, new) = (SecretString::new(form.current_password), SecretString::new(form.new_password));
    let changed = state.services.accounts.change_password(&user, &session_now, current, new, client).await;
    let error = match changed {
        Ok(kept) => {
            session.adopt(kept);
            // Post/redirect/get: a reload of the answer must not post the passwords again.
            return Ok(see_other(&paths::account_saved("password", "password")));
        }
        Err(AccountError::Invalid(problem)) => field_error(c.t, &problem, "new_password"),
        Err(AccountError::TooMany(retry_after)) => {
            return Err(AppError::TooMany { reason: "password change attempts", retry_after });
        }
        Err(AccountError::LinkClosed) => return Err(AppError::Forbidden("session ended during regeneration")),
        Err(error) => return Err(account_error(error)),
    };
    let mut page = AccountPage::new(c, session, &user);
    page.password_error = error;
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// The account page answering a refused deletion form (400): the reason, and nothing changed.
pub fn account_with_deletion_error(
    c: Chrome,
    session: &SessionHandle,
    user: &User,
    message: &'static str,
) -> Result<Response, AppError> {
    let mut page = AccountPage::new(c, session, user);
    page.delete_error = FieldError::on("password", message);
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// The account page answering a second-factor form refused for a wrong current password (400).
pub async fn account_with_factor_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    user: &User,
    message: &'static str,
) -> Result<Response, AppError> {
    let mut page = AccountPage::new(c, session, user);
    page.factors = Some(state.services.factors.status(user).await?);
    page.passkeys = Some(PasskeySection::of(&page.c, state, user, None).await?);
    page.factor_error = FieldError::on("password", message);
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// The account page answering a refused passkey form (400): the field that was wrong and why.
pub async fn account_with_passkey_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    user: &User,
    field: &str,
    message: &'static str,
) -> Result<Response, AppError> {
    let mut page = AccountPage::new(c, session, user);
    page.factors = Some(state.services.factors.status(user).await?);
    let mut section = PasskeySection::of(&page.c, state, user, None).await?;
    section.error = Some((field.to_owned(), message));
    page.passkeys = Some(section);
    render_with(StatusCode::BAD_REQUEST, &page)
}

/// The account page answering a refused token form (400): the field that was wrong and why.
pub async fn account_with_token_error(
    c: Chrome,
    state: &AppState,
    session: &SessionHandle,
    user: &User,
    field: &'static str,
    message: &'static str,
) -> Result<Response, AppError> {
    let mut page = AccountPage::new(c, session, user);
    let mut section = TokenSection::of(&page.c, state, user, None).await?;
    section.error = Some((field, message));
    page.tokens = Some(section);
    render_with(StatusCode::BAD_REQUEST, &page)
}
