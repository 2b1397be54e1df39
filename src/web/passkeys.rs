//! Passkeys on the web: adding and removing one on the account page, signing in with one alone
//! (`/login/passkey`), and using one as the step after a password (`/login/second-factor/passkey`).
//!
//! The browser's part is `static/passkey.js`: it posts the form to the `…/options` endpoint (JSON
//! answer: the challenge), lets the browser make or use the passkey, puts the answer in the form's
//! hidden `credential` field and submits the form. The answer is thus an ordinary form post whose
//! result is a page like any other; without JavaScript it arrives empty and the page says that
//! passkeys need JavaScript.

use poem::{
    IntoResponse, Response, handler,
    http::StatusCode,
    web::{Json, Path},
};
use serde::Deserialize;
use serde_json::json;

use super::{AppError, Chrome, Context, SignedIn, form::Form, paths, see_other};
use crate::{secret::SecretString, services::passkeys::PasskeyRefusal};

#[derive(Deserialize)]
pub struct PasskeyForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    /// The browser's answer, as the script put it (JSON).
    #[serde(default)]
    credential: String,
}

/// An options request refused, for the script: `{"error": text}`, and `location` when the person
/// must start over elsewhere.
fn refused_json(c: &Chrome, refusal: PasskeyRefusal) -> Result<Response, AppError> {
    let p = &c.t.auth.passkeys;
    let (status, message, location) = match refusal {
        PasskeyRefusal::Off => (StatusCode::NOT_FOUND, p.script_unsupported, None),
        PasskeyRefusal::WrongPassword => (StatusCode::BAD_REQUEST, c.t.auth.password_current_wrong, None),
        PasskeyRefusal::BadName => (StatusCode::BAD_REQUEST, p.name_invalid, None),
        PasskeyRefusal::NoPendingSignIn => {
            (StatusCode::CONFLICT, c.t.auth.second_factor.expired, Some(paths::LOGIN_EXPIRED))
        }
        PasskeyRefusal::Expired => (StatusCode::CONFLICT, p.expired, None),
        PasskeyRefusal::NotAccepted | PasskeyRefusal::Taken => (StatusCode::BAD_REQUEST, p.not_accepted, None),
        PasskeyRefusal::TooMany(retry_after) => {
            return Err(AppError::TooMany { reason: "passkey password attempts", retry_after });
        }
        PasskeyRefusal::Fault(fault) => return Err(fault.into()),
    };
    let location = location.map(|path| format!("{}{path}", c.base));
    Ok((status, Json(json!({ "error": message, "location": location }))).into_response())
}

/// The options for the script, or why there are none.
fn options_json(
    c: &Chrome,
    options: Result<impl serde::Serialize + Send, PasskeyRefusal>,
) -> Result<Response, AppError> {
    match options {
        Ok(options) => Ok(Json(options).into_response()),
        Err(refusal) => refused_json(c, refusal),
    }
}

/// A refused answer, as the text its page shows; `Err` for what is not the person's to fix.
fn refusal_text(c: &Chrome, refusal: PasskeyRefusal) -> Result<&'static str, AppError> {
    let p = &c.t.auth.passkeys;
    Ok(match refusal {
        PasskeyRefusal::Off => p.script_unsupported,
        PasskeyRefusal::WrongPassword => c.t.auth.password_current_wrong,
        PasskeyRefusal::BadName => p.name_invalid,
        PasskeyRefusal::Expired | PasskeyRefusal::NoPendingSignIn => p.expired,
        PasskeyRefusal::NotAccepted => p.not_accepted,
        PasskeyRefusal::Taken => p.taken,
        PasskeyRefusal::TooMany(retry_after) => {
            return Err(AppError::TooMany { reason: "passkey password attempts", retry_after });
        }
        PasskeyRefusal::Fault(fault) => return Err(fault.into()),
    })
}

/// What posting the browser's answer came to.
enum Answered<T> {
    Done(T),
    /// The pending sign-in it belonged to ran out: back to signing in.
    PendingSignInGone,
    /// The text the page shows: passkeys need JavaScript (the answer arrived empty), or why the
    /// answer was refused.
    Refused(&'static str),
}

/// Verifies the browser's `credential` with `verify`, unless it arrived empty.
async fn answered<T>(
    c: &Chrome,
    credential: &str,
    verify: impl Future<Output = Result<T, PasskeyRefusal>>,
) -> Result<Answered<T>, AppError> {
    if credential.is_empty() {
        return Ok(Answered::Refused(c.t.auth.passkeys.needs_script));
    }
    Ok(match verify.await {
        Ok(done) => Answered::Done(done),
        Err(PasskeyRefusal::NoPendingSignIn) => Answered::PendingSignInGone,
        Err(refusal) => Answered::Refused(refusal_text(c, refusal)?),
    })
}

/// POST /account/passkeys/options: the current password and the name first, then the challenge.
#[handler]
pub async fn registration_options(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasskeyForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let current = session.current().ok_or(AppError::SignInRequired)?;
    let password = SecretString::new(form.password);
    let options = state.services.passkeys.begin_registration(&user, &current, &form.name, password, client).await;
    options_json(&c, options)
}

/// POST /account/passkeys: the browser's new passkey. The account's first factor shows its
/// recovery codes once; otherwise back to the list.
#[handler]
pub async fn register(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasskeyForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    let current = session.current().ok_or(AppError::SignInRequired)?;
    if form.credential.is_empty() {
        let message = c.t.auth.passkeys.needs_script;
        return super::account::account_with_passkey_error(c, state, session, &user, "name", message).await;
    }
    match state.services.passkeys.register(&user, &current, &form.name, &form.credential, client).await {
        Ok(Some(codes)) => super::second_factor::recovery_codes(c, session, codes, paths::ACCOUNT),
        Ok(None) => Ok(see_other(&paths::account_saved("passkey", "passkeys"))),
        Err(refusal) => {
            let message = refusal_text(&c, refusal)?;
            super::account::account_with_passkey_error(c, state, session, &user, "name", message).await
        }
    }
}

/// POST /account/passkeys/{id}/remove: asks for the current password.
#[handler]
pub async fn remove(
    Context { c, state, session, client, .. }: Context<'_>,
    Path(id): Path<i64>,
    Form(form): Form<PasskeyForm>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    match state.services.passkeys.remove(&user, id, SecretString::new(form.password), client).await {
        Ok(true) => Ok(see_other(&paths::account_saved("passkey-removed", "passkeys"))),
        Ok(false) => Err(AppError::NotFound("no such passkey on this account")),
        Err(refusal) => {
            let message = refusal_text(&c, refusal)?;
            let field = format!("password-{id}");
            super::account::account_with_passkey_error(c, state, session, &user, &field, message).await
        }
    }
}

/// POST /login/enrol/passkey/options: the set-up a team's policy requires, with a passkey.
#[handler]
pub async fn enrolment_options(
    Context { c, state, session, .. }: Context<'_>,
    Form(form): Form<PasskeyForm>,
) -> Result<Response, AppError> {
    options_json(&c, state.services.passkeys.begin_enrolment(session.current().as_ref(), &form.name).await)
}

/// POST /login/enrol/passkey: the new passkey signs the session in and the recovery codes are
/// shown once.
#[handler]
pub async fn enrol(
    Context { c, state, session, client, req }: Context<'_>,
    Form(form): Form<PasskeyForm>,
) -> Result<Response, AppError> {
    let current = session.current();
    let enrolled = state.services.passkeys.enrol(current.as_ref(), &form.name, &form.credential, client);
    match answered(&c, &form.credential, enrolled).await? {
        Answered::Done((signed_in, codes)) => {
            session.adopt(signed_in);
            super::second_factor::recovery_codes(Chrome::for_request(req), session, codes, paths::SHARES)
        }
        Answered::PendingSignInGone => Ok(see_other(paths::LOGIN_EXPIRED)),
        Answered::Refused(message) => super::second_factor::enrol_with_passkey_error(c, state, session, message).await,
    }
}

/// POST /login/passkey/options: a challenge any of this site's passkeys can answer. The browser
/// gets a session for it if it had none (so many per client: see the service).
#[handler]
pub async fn sign_in_options(Context { c, state, session, client, .. }: Context<'_>) -> Result<Response, AppError> {
    if !state.services.sign_in_methods().await?.passkeys_available {
        return refused_json(&c, PasskeyRefusal::Off);
    }
    let begun = state.services.passkeys.begin_sign_in(session.current().as_ref(), client).await;
    let options = begun.map(|(options, started)| {
        if let Some(new) = started {
            session.adopt(new);
        }
        options
    });
    options_json(&c, options)
}

/// POST /login/passkey: the browser's answer; signed in on a new session id.
#[handler]
pub async fn sign_in(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasskeyForm>,
) -> Result<Response, AppError> {
    let current = session.current();
    let signed_in = state.services.passkeys.sign_in(current.as_ref(), &form.credential, client);
    let message = match answered(&c, &form.credential, signed_in).await? {
        Answered::Done(signed_in) => {
            session.adopt(signed_in);
            return Ok(see_other(paths::SHARES));
        }
        // Never: a sign-in with a passkey alone has no pending sign-in.
        Answered::PendingSignInGone => c.t.auth.passkeys.expired,
        Answered::Refused(message) => message,
    };
    super::auth::login_with_passkey_error(c, state, session, message).await
}

/// POST /login/second-factor/passkey/options: a challenge for the pending sign-in's passkeys.
#[handler]
pub async fn second_factor_options(Context { c, state, session, .. }: Context<'_>) -> Result<Response, AppError> {
    options_json(&c, state.services.passkeys.begin_second_factor(session.current().as_ref()).await)
}

/// POST /login/second-factor/passkey: the step after the password, with a passkey.
#[handler]
pub async fn second_factor(
    Context { c, state, session, client, .. }: Context<'_>,
    Form(form): Form<PasskeyForm>,
) -> Result<Response, AppError> {
    let current = session.current();
    let signed_in = state.services.passkeys.second_factor(current.as_ref(), &form.credential, client);
    match answered(&c, &form.credential, signed_in).await? {
        Answered::Done(signed_in) => {
            session.adopt(signed_in);
            Ok(see_other(paths::SHARES))
        }
        Answered::PendingSignInGone => Ok(see_other(paths::LOGIN_EXPIRED)),
        Answered::Refused(message) => super::second_factor::verify_with_passkey_error(c, state, session, message).await,
    }
}
