//! `watasu user add`.

use std::io::Read;

use super::usage;
use crate::{
    accounts::{CreateUserError, EmailAddress, Role, Users, password},
    config::Config,
    open_database,
    secret::{SecretString, random_token},
};

pub struct AddUser {
    pub email: String,
    pub name: String,
    pub admin: bool,
    pub password_stdin: bool,
}

pub async fn add_user(config: &Config, args: AddUser) -> anyhow::Result<()> {
    let email = EmailAddress::parse(&args.email).map_err(usage)?;
    let name = &crate::accounts::clean_display_name(&args.name);
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(usage("--name must be 1 to 100 printable characters"));
    }
    let (password, generated) = if args.password_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        (SecretString::new(text.trim_end_matches(['\r', '\n'])), false)
    } else {
        (random_token(), true)
    };
    let words = password::personal_words(email.as_str(), name);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    password::check_new_password(&password, &words).map_err(|e| usage(e.to_string()))?;
    let db = open_database(config).await?;
    let hash = password::hash_password(password.clone()).await?;
    let role = if args.admin { Role::Admin } else { Role::Sender };
    match Users::new(db).create(&email, name, &hash, role).await {
        Ok(id) => {
            crate::outln!("created {} account {id} for {}", role.as_str(), email.as_str());
            if generated {
                crate::outln!("password (shown once): {}", password.expose());
            }
            Ok(())
        }
        Err(CreateUserError::DuplicateEmail) => Err(usage(format!("an account for {} already exists", email.as_str()))),
        Err(error) => Err(error.into()),
    }
}
