//! `watasu sign-in allow-passwords`: the way back in when the single sign-on provider is gone and
//! password sign-in was turned off.

use crate::{config::Config, services::Services};

pub async fn allow_passwords(config: &Config) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let changed = services.sso.set_passwords_allowed(None, true, None).await;
    services.close().await;
    match changed.map_err(|e| anyhow::anyhow!("{e}"))? {
        true => crate::outln!("password sign-in is on again: members can sign in with their password"),
        false => crate::outln!("password sign-in was already on; nothing changed"),
    }
    Ok(())
}
