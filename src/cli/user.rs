//! `watasu user add` and `watasu user reset-factors`.

use std::io::Read;

use super::usage;
use crate::{
    accounts::{EmailAddress, Role, password::breached::is_breached},
    config::Config,
    i18n::Lang,
    secret::{SecretString, random_token},
    services::{
        Services,
        accounts::{AccountError, FormProblem, NewAccountForm},
    },
};

pub struct AddUser {
    pub email: String,
    pub name: String,
    pub admin: bool,
    pub password_stdin: bool,
}

pub async fn add_user(config: &Config, args: AddUser) -> anyhow::Result<()> {
    // Checked before anything is read from standard input; the service checks it again.
    let email = EmailAddress::parse(&args.email).map_err(usage)?;
    let (password, generated) = if args.password_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        (SecretString::new(text.trim_end_matches(['\r', '\n'])), false)
    } else {
        (generated_password(), true)
    };
    let role = if args.admin { Role::Admin } else { Role::Sender };
    let services = Services::open(config).await?;
    let form =
        NewAccountForm { name: &args.name, email: email.as_str(), password: password.clone(), lang: Lang::default() };
    let added = services.accounts.add(form, role).await;
    services.close().await;
    match added {
        Ok(id) => {
            crate::outln!("created {} account {id} for {}", role.code(), email.as_str());
            if generated {
                crate::outln!("password (shown once): {}", password.expose());
            }
            Ok(())
        }
        Err(AccountError::Invalid(FormProblem::Password(rule))) => Err(usage(rule.to_string())),
        Err(AccountError::Invalid(_)) => Err(usage("--name must be 1 to 100 printable characters")),
        Err(AccountError::Exists) => Err(usage(format!("an account for {} already exists", email.as_str()))),
        Err(error) => Err(error.into()),
    }
}

/// A random password the breached-password filter takes: it refuses about one in 260 random
/// ones by chance (a false positive), and such a one is simply drawn again.
fn generated_password() -> SecretString {
    loop {
        let password = random_token();
        if !is_breached(password.expose()) {
            return password;
        }
    }
}

/// `watasu user reset-factors EMAIL`: for someone who lost every factor; prints what it removed.
pub async fn reset_factors(config: &Config, email: &str) -> anyhow::Result<()> {
    let email = EmailAddress::parse(email).map_err(usage)?;
    let services = Services::open(config).await?;
    let done = match services.accounts.active_by_email(&email).await {
        Ok(Some(user)) => services.factors.reset(&user, None, None).await.map(Some),
        Ok(None) => Ok(None),
        Err(error) => Err(error),
    };
    services.close().await;
    let Some(reset) = done? else { return Err(usage(format!("no active account for {}", email.as_str()))) };
    let removed = &reset.removed;
    let app = if removed.totp { "removed the authenticator app" } else { "no authenticator app was set up" };
    crate::outln!(
        "{}: {app}; {} passkeys removed; {} unused recovery codes removed; {} sessions ended",
        email.as_str(),
        removed.passkeys,
        removed.recovery_codes,
        reset.sessions_ended
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_password_is_never_one_the_filter_refuses() {
        // About 40 of 10,000 random tokens are refused by chance; none of the generated ones.
        assert!((0..10_000).all(|_| !is_breached(generated_password().expose())));
    }
}
