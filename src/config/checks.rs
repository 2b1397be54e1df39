//! The checks `Config::from_settings` makes of relations between settings, and of the database
//! URL and bearer tokens, each failing with the setting it names.

use super::{ConfigError, DELIVERY_GRACE_MIN, Settings, format_duration};
use crate::secret::SecretString;

/// Durations that must be positive or bounded by another, the upload cap and the client share.
pub(super) fn check_durations(settings: &Settings) -> Result<(), ConfigError> {
    if settings.delivery_grace < DELIVERY_GRACE_MIN {
        let floor = format_duration(DELIVERY_GRACE_MIN);
        return Err(ConfigError::new("WATASU_DELIVERY_GRACE", format!("must be at least {floor}")));
    }
    // An answered request's files are collected through the delivery grace (see `ANSWER_REQUEST`):
    // a retention shorter than it could not be kept to.
    if settings.request_retention < settings.delivery_grace {
        return Err(ConfigError::new("WATASU_REQUEST_RETENTION", "must not be shorter than WATASU_DELIVERY_GRACE"));
    }
    if settings.share_ttl < crate::share::MIN_TTL {
        let floor = format_duration(crate::share::MIN_TTL);
        return Err(ConfigError::new("WATASU_SHARE_TTL", format!("must be at least {floor}")));
    }
    if settings.share_ttl_max < settings.share_ttl {
        return Err(ConfigError::new("WATASU_SHARE_TTL_MAX", "must not be shorter than WATASU_SHARE_TTL"));
    }
    for (setting, value) in [
        ("WATASU_GRANT_TTL", settings.grant_ttl),
        ("WATASU_GC_INTERVAL", settings.gc_interval),
        ("WATASU_SESSION_IDLE", settings.session_idle),
        ("WATASU_DB_TIMEOUT", settings.db_timeout),
        ("WATASU_PURGE_RETRY_BASE", settings.purge_retry_base),
        ("WATASU_MAINTENANCE_MIN_INTERVAL", settings.maintenance_min_interval),
        ("WATASU_MAINTENANCE_INTERVAL", settings.maintenance_interval),
        ("WATASU_HEADER_TIMEOUT", settings.header_timeout),
        ("WATASU_IDLE_TIMEOUT", settings.idle_timeout),
        ("WATASU_BODY_TIMEOUT", settings.body_timeout),
        ("WATASU_SMALL_BODY_TIMEOUT", settings.small_body_timeout),
        ("WATASU_MIN_BODY_RATE_WINDOW", settings.min_body_rate_window),
    ] {
        if value.is_zero() {
            return Err(ConfigError::new(setting, "must be longer than 0s"));
        }
    }
    let stuck_after = crate::mail::outbox::STUCK_AFTER;
    if settings.smtp_timeout.is_zero() || settings.smtp_timeout >= stuck_after {
        let reason = format!(
            "must be longer than 0s and shorter than {} (after that an outbox mail still being sent is taken back)",
            format_duration(stuck_after)
        );
        return Err(ConfigError::new("WATASU_SMTP_TIMEOUT", reason));
    }
    if settings.session_max_age < settings.session_idle {
        return Err(ConfigError::new("WATASU_SESSION_MAX_AGE", "must not be shorter than WATASU_SESSION_IDLE"));
    }
    if settings.max_connections_per_client.is_some_and(|n| n > settings.max_connections) {
        return Err(ConfigError::new(
            "WATASU_MAX_CONNECTIONS_PER_CLIENT",
            "must not be more than WATASU_MAX_CONNECTIONS",
        ));
    }
    if settings.max_upload_bytes == 0 {
        return Err(ConfigError::new("WATASU_MAX_UPLOAD_BYTES", "must be more than 0"));
    }
    Ok(())
}

/// The database URL (SQLite in the data folder by default), refused when it reaches a remote
/// PostgreSQL without checking its certificate, unless the operator accepts that.
pub(super) fn database_url(settings: &Settings) -> Result<String, ConfigError> {
    let database_url = settings
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}?mode=rwc", settings.data_dir.join("watasu.db").display()));
    if let crate::db::TlsCheck::Unverified { host: _, mode } = crate::db::check_postgres_tls(&database_url)
        && !settings.database_allow_unverified_tls
    {
        return Err(ConfigError::new(
            "WATASU_DATABASE_URL",
            format!(
                "connects to a remote PostgreSQL with sslmode={mode}, which does not check the server's \
                 certificate: add sslmode=verify-full (and sslrootcert= for a private CA), or set \
                 WATASU_DATABASE_ALLOW_UNVERIFIED_TLS=true to accept it"
            ),
        ));
    }
    Ok(database_url)
}

/// A bearer token must be long and plain enough to put in a header and not be guessed.
pub(super) fn check_bearer_token(variable: &'static str, token: Option<&SecretString>) -> Result<(), ConfigError> {
    match token {
        Some(token) if token.expose().chars().count() < 32 || !token.expose().bytes().all(|b| b.is_ascii_graphic()) => {
            Err(ConfigError::new(
                variable,
                "must be at least 32 printable characters without spaces (try: openssl rand -hex 32)",
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::config::{Config, ConfigError, Settings};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        settings: Settings,
    }

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        Config::from_settings(Cli::try_parse_from([&["watasu"][..], args].concat()).unwrap().settings)
    }

    #[test]
    fn start_up_refuses_a_remote_postgresql_without_verified_tls_unless_told_to_accept_it() {
        let url = "postgres://watasu:hunter2@db.example.com/watasu?sslmode=require";
        let error = config(&["--database-url", url]).unwrap_err();
        assert_eq!(error.setting, "WATASU_DATABASE_URL");
        assert!(error.to_string().contains("sslmode=verify-full"), "{error}");
        assert!(!error.to_string().contains("hunter2"));
        assert!(config(&["--database-url", url, "--database-allow-unverified-tls"]).is_ok());
        assert!(config(&["--database-url", url, "--database-allow-unverified-tls", "true"]).is_ok());
        let verified = "postgres://watasu:hunter2@db.example.com/watasu?sslmode=verify-full";
        assert!(config(&["--database-url", verified]).is_ok());
    }

    #[test]
    fn start_up_refuses_an_smtp_password_sent_unencrypted_to_a_remote_relay() {
        let error = config(&["--smtp-url", "smtp://mailer:hunter2@smtp.example.com:587"]).unwrap_err();
        assert_eq!(error.setting, "WATASU_SMTP_URL");
        assert!(error.to_string().contains("tls=required"), "{error}");
        assert!(!error.to_string().contains("hunter2"));
        assert!(config(&["--smtp-url", "smtp://mailer:hunter2@smtp.example.com:587?tls=required"]).is_ok());
    }

    #[test]
    fn start_up_refuses_the_outbound_scan_without_a_clamd_to_ask() {
        let error = config(&["--scan-outbound"]).unwrap_err();
        assert_eq!(error.setting, "WATASU_SCAN_OUTBOUND");
        assert!(config(&["--scan-outbound", "--clamd", "tcp://127.0.0.1:3310"]).is_ok());
        assert!(config(&["--scan-outbound", "--clamd", "/run/clamav/clamd.ctl"]).is_ok());
        assert!(Cli::try_parse_from(["watasu", "--clamd", "clamd.ctl"]).is_err(), "a relative socket path");
        assert!(Cli::try_parse_from(["watasu", "--scan-too-large", "ignore"]).is_err(), "an unknown policy");
    }

    #[test]
    fn start_up_refuses_a_request_retention_shorter_than_the_delivery_grace() {
        let error = config(&["--request-retention", "10m", "--delivery-grace", "15m"]).unwrap_err();
        assert_eq!(error.setting, "WATASU_REQUEST_RETENTION");
        assert!(config(&["--request-retention", "15m", "--delivery-grace", "15m"]).is_ok());
    }

    #[test]
    fn start_up_refuses_a_delivery_grace_under_its_floor() {
        let error = config(&["--delivery-grace", "1m"]).unwrap_err();
        assert_eq!(error.setting, "WATASU_DELIVERY_GRACE");
        assert!(error.to_string().contains("at least 5m"), "{error}");
        assert!(config(&["--delivery-grace", "5m"]).is_ok());
    }
}
