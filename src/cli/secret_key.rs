//! `watasu secret-key new`: starts over with a new instance secret when the old one is lost, and
//! says what the database holds that the new key cannot open.

use crate::{
    cli::usage,
    config::Config,
    key_check::{KeyedData, key_path},
    secret::SecretKey,
};

pub async fn new_key(config: &Config) -> anyhow::Result<()> {
    if config.settings.secret_key.is_some() {
        return Err(usage("WATASU_SECRET_KEY is set: that is the key in use; no key file is read or made"));
    }
    let path = key_path(&config.settings.data_dir);
    if path.exists() {
        return Err(usage(format!(
            "{} exists and is the key in use; a key is never replaced by this command",
            path.display()
        )));
    }
    let db = crate::open_database(config).await?;
    let held = KeyedData::count(&db).await;
    db.close().await;
    let held = held?;
    SecretKey::generate(&path)?;
    crate::outln!("made a new secret key in {}", path.display());
    if !held.is_empty() {
        crate::outln!("the new key cannot open what the old one sealed: {}", held.describe());
        crate::outln!(
            "accounts with an authenticator app need `watasu user reset-factors EMAIL`, then set it up again; \
             passkeys must be added again; waiting mails are given up; recipients ask for a new code; \
             secret notes not read yet cannot be opened (their senders send them again); webhook endpoints \
             are not delivered to until their senders rotate the secret"
        );
    }
    Ok(())
}
