//! Single sign-on with an OpenID Connect provider: the issuer, the client registered there and
//! the domains whose people get an account at their first sign-in. All of issuer, client id and
//! secret, or none of them: half a configuration stops start-up.

use url::Url;

use super::ConfigError;
use crate::secret::SecretString;

/// The single sign-on settings as given.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OidcSettings {
    /// The OpenID provider's issuer URL (discovery reads ISSUER/.well-known/openid-configuration).
    /// Unset: no single sign-on.
    #[arg(long = "oidc-issuer", env = "WATASU_OIDC_ISSUER", global = true)]
    pub issuer: Option<String>,

    /// The client id of watasu's registration at the provider.
    #[arg(long = "oidc-client-id", env = "WATASU_OIDC_CLIENT_ID", global = true)]
    pub client_id: Option<String>,

    /// The client secret of that registration.
    #[arg(long = "oidc-client-secret", env = "WATASU_OIDC_CLIENT_SECRET", hide_env_values = true, global = true)]
    pub client_secret: Option<SecretString>,

    /// The provider's name on the sign-in button ("Sign in with NAME").
    #[arg(long = "oidc-name", env = "WATASU_OIDC_NAME", default_value = "SSO", global = true)]
    pub name: String,

    /// Comma-separated mail domains whose people get a sender account at their first single
    /// sign-on. Empty: single sign-on only signs in existing accounts and open invitations.
    #[arg(long = "oidc-allowed-domains", env = "WATASU_OIDC_ALLOWED_DOMAINS", value_delimiter = ',', global = true)]
    pub allowed_domains: Vec<String>,
}

/// Validated single sign-on settings.
#[derive(Clone, Debug)]
pub struct SsoConfig {
    /// The issuer exactly as configured: ID tokens must name this very string.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: SecretString,
    pub name: String,
    /// Lower-case domains, without `@`.
    pub allowed_domains: Vec<String>,
    /// BASE_URL + `/login/sso/callback`: what the provider's registration must list.
    pub redirect_uri: String,
}

impl SsoConfig {
    /// Whether an address of this (lower-case) domain may get an account at its first sign-in.
    pub fn allows_domain(&self, domain: &str) -> bool {
        self.allowed_domains.iter().any(|d| d == domain)
    }
}

impl OidcSettings {
    /// `None` without single sign-on; a partial set is refused, naming what is missing.
    pub fn resolve(&self, base_url: &Url) -> Result<Option<SsoConfig>, ConfigError> {
        let given = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
        let parts = [
            ("WATASU_OIDC_ISSUER", given(&self.issuer)),
            ("WATASU_OIDC_CLIENT_ID", given(&self.client_id)),
            ("WATASU_OIDC_CLIENT_SECRET", self.client_secret.as_ref().is_some_and(|s| !s.expose().is_empty())),
        ];
        if parts.iter().all(|(_, set)| !set) {
            return Ok(None);
        }
        if let Some((missing, _)) = parts.iter().find(|(_, set)| !set) {
            return Err(ConfigError::new(
                missing,
                "is missing: single sign-on needs WATASU_OIDC_ISSUER, WATASU_OIDC_CLIENT_ID and \
                 WATASU_OIDC_CLIENT_SECRET together (or none of them)",
            ));
        }
        let issuer = self.issuer.as_deref().unwrap_or_default().trim().to_owned();
        check_issuer(&issuer)?;
        let allowed_domains = self
            .allowed_domains
            .iter()
            .map(|d| d.trim().trim_start_matches('@').to_lowercase())
            .filter(|d| !d.is_empty())
            .map(|d| {
                let plain = d.contains('.') && d.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b));
                if plain {
                    Ok(d)
                } else {
                    Err(ConfigError::new("WATASU_OIDC_ALLOWED_DOMAINS", format!("'{d}' is not a domain")))
                }
            })
            .collect::<Result<_, _>>()?;
        let name = match self.name.trim() {
            "" => "SSO".to_owned(),
            name => name.to_owned(),
        };
        Ok(Some(SsoConfig {
            issuer,
            client_id: self.client_id.as_deref().unwrap_or_default().trim().to_owned(),
            client_secret: self.client_secret.clone().unwrap_or_else(|| SecretString::new("")),
            name,
            allowed_domains,
            redirect_uri: format!("{}/login/sso/callback", base_url.as_str().trim_end_matches('/')),
        }))
    }
}

/// The issuer must be an https URL (plain http only on this machine, for a provider next to it).
fn check_issuer(issuer: &str) -> Result<(), ConfigError> {
    let refuse = |reason: &str| ConfigError::new("WATASU_OIDC_ISSUER", format!("'{issuer}' {reason}"));
    let url = Url::parse(issuer).map_err(|_| refuse("is not a URL"))?;
    let local = url.host_str().is_some_and(crate::is_loopback_host);
    match url.scheme() {
        "https" => Ok(()),
        "http" if local => Ok(()),
        _ => Err(refuse("must be an https:// address")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(issuer: Option<&str>, id: Option<&str>, secret: Option<&str>) -> OidcSettings {
        OidcSettings {
            issuer: issuer.map(str::to_owned),
            client_id: id.map(str::to_owned),
            client_secret: secret.map(SecretString::new),
            name: "Google Workspace".to_owned(),
            allowed_domains: vec![" Example.COM".to_owned(), "".to_owned()],
        }
    }

    #[test]
    fn none_of_the_three_is_no_single_sign_on_and_all_three_configure_it() {
        let base = Url::parse("https://files.example.com/files/").unwrap();
        assert!(settings(None, None, None).resolve(&base).unwrap().is_none());
        let sso =
            settings(Some("https://accounts.google.com"), Some("id"), Some("s3cret")).resolve(&base).unwrap().unwrap();
        assert_eq!(sso.redirect_uri, "https://files.example.com/files/login/sso/callback");
        assert_eq!(sso.issuer, "https://accounts.google.com");
        assert_eq!(sso.allowed_domains, ["example.com"]);
    }

    #[test]
    fn a_partial_set_or_a_plain_http_issuer_stops_start_up_without_echoing_the_secret() {
        let base = Url::parse("https://files.example.com/").unwrap();
        let error = settings(Some("https://idp.example.com"), None, Some("s3cret")).resolve(&base).unwrap_err();
        assert_eq!(error.setting, "WATASU_OIDC_CLIENT_ID");
        assert!(!error.to_string().contains("s3cret"));
        let error = settings(None, Some("id"), None).resolve(&base).unwrap_err();
        assert_eq!(error.setting, "WATASU_OIDC_ISSUER");
        let error = settings(Some("http://idp.example.com"), Some("id"), Some("s")).resolve(&base).unwrap_err();
        assert_eq!(error.setting, "WATASU_OIDC_ISSUER");
        assert!(settings(Some("http://127.0.0.1:9000"), Some("id"), Some("s")).resolve(&base).is_ok());
    }
}
