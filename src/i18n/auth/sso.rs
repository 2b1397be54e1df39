//! The strings of single sign-on: the button, the refusal pages, the team's switch between
//! passwords and single sign-on only. `{name}` stands for the provider's configured name.

pub struct SsoText {
    /// The button on the sign-in page.
    pub button: &'static str,
    /// Between the button and the password form.
    pub or_password: &'static str,
    pub refused_title: &'static str,
    pub denied: &'static str,
    pub unknown_state: &'static str,
    pub code_refused: &'static str,
    pub token_refused: &'static str,
    pub email_unverified: &'static str,
    pub no_account: &'static str,
    pub disabled: &'static str,
    pub subject_mismatch: &'static str,
    /// An account with a password of its own is linked only from a browser signed in to it.
    pub link_needs_sign_in: &'static str,
    pub back_to_login: &'static str,
    pub unavailable_title: &'static str,
    pub unavailable_body: &'static str,
    pub unavailable_passwords: &'static str,
    pub passwords_off_title: &'static str,
    pub passwords_off_body: &'static str,
    pub policy_title: &'static str,
    pub passwords_on_status: &'static str,
    pub passwords_off_status: &'static str,
    pub turn_off: &'static str,
    pub turn_on: &'static str,
    pub turn_off_hint: &'static str,
    pub not_configured: &'static str,
    pub policy_saved: &'static str,
    /// The invitation page and the account page while passwords are off.
    pub invite_lead: &'static str,
    pub account_hint: &'static str,
}

impl SsoText {
    /// `text` with the provider's name in place of `{name}`.
    pub fn with_name(&self, text: &str, name: &str) -> String {
        text.replace("{name}", name)
    }
}

pub const EN: SsoText = SsoText {
    button: "Sign in with {name}",
    or_password: "or with your password",
    refused_title: "You are not signed in",
    denied: "The sign-in was cancelled at {name}. Nothing was changed.",
    unknown_state: "This sign-in was already used, expired or started in another browser. Please start again from the sign-in page.",
    code_refused: "The sign-in could not be completed. Please start again from the sign-in page.",
    token_refused: "The answer from {name} could not be trusted, so you were not signed in. Please try again; if it keeps happening, tell an admin of your team.",
    email_unverified: "{name} did not confirm your email address, so it cannot be matched to an account. Please ask an admin of your team.",
    no_account: "There is no account for this address yet. Please ask an admin of your team to invite you.",
    disabled: "This account is disabled. Please ask an admin of your team.",
    subject_mismatch: "This address now belongs to someone else at {name}, so it cannot sign in to the existing account. Please ask an admin of your team.",
    link_needs_sign_in: "An account with this address already signs in with its own password. To use {name} for it, sign in with the password (and the code, if asked) first, then choose {name} once more from the sign-in page in the same browser.",
    back_to_login: "Back to sign-in",
    unavailable_title: "{name} cannot be reached",
    unavailable_body: "Signing in with {name} does not work at the moment. Please try again in a few minutes.",
    unavailable_passwords: "You can also sign in with your password.",
    passwords_off_title: "Password sign-in is turned off",
    passwords_off_body: "Your team signs in with {name} only.",
    policy_title: "Sign-in methods",
    passwords_on_status: "Members can sign in with {name} or with their password.",
    passwords_off_status: "Password sign-in is off: members sign in with {name} only.",
    turn_off: "Turn password sign-in off",
    turn_on: "Turn password sign-in back on",
    turn_off_hint: "Check first that you can sign in with {name} yourself. If {name} is ever unavailable, the command `watasu sign-in allow-passwords` on the server turns passwords back on.",
    not_configured: "Single sign-on is not configured, so members sign in with their password.",
    policy_saved: "The sign-in methods were saved.",
    invite_lead: "Your team signs in with single sign-on: use the button below to accept this invitation.",
    account_hint: "Your team signs in with single sign-on; passwords are turned off.",
};

pub const JA: SsoText = SsoText {
    button: "{name}でサインイン",
    or_password: "またはパスワードでサインイン",
    refused_title: "サインインできませんでした",
    denied: "{name}でサインインが取り消されました。何も変更されていません。",
    unknown_state: "このサインインは使用済みか、期限切れか、別のブラウザーで始められたものです。サインインのページからもう一度お試しください。",
    code_refused: "サインインを完了できませんでした。サインインのページからもう一度お試しください。",
    token_refused: "{name}からの応答を確認できなかったため、サインインしませんでした。もう一度お試しください。繰り返し起きる場合は、チームの管理者にお知らせください。",
    email_unverified: "{name}でメールアドレスが確認されていないため、アカウントと照合できません。チームの管理者にお問い合わせください。",
    no_account: "このメールアドレスのアカウントはまだありません。チームの管理者に招待を依頼してください。",
    disabled: "このアカウントは無効になっています。チームの管理者にお問い合わせください。",
    subject_mismatch: "このメールアドレスは{name}で別の方のものになっているため、既存のアカウントにはサインインできません。チームの管理者にお問い合わせください。",
    link_needs_sign_in: "このメールアドレスのアカウントは、すでに独自のパスワードでサインインしています。{name}で使うには、まずパスワード（求められた場合は確認コードも）でサインインし、同じブラウザーのサインインのページからもう一度{name}を選んでください。",
    back_to_login: "サインインに戻る",
    unavailable_title: "{name}に接続できません",
    unavailable_body: "現在、{name}でのサインインをご利用いただけません。数分後にもう一度お試しください。",
    unavailable_passwords: "パスワードでサインインすることもできます。",
    passwords_off_title: "パスワードでのサインインは停止されています",
    passwords_off_body: "このチームでは{name}でのみサインインできます。",
    policy_title: "サインイン方法",
    passwords_on_status: "メンバーは{name}またはパスワードでサインインできます。",
    passwords_off_status: "パスワードでのサインインは停止中です。メンバーは{name}でのみサインインできます。",
    turn_off: "パスワードでのサインインを停止する",
    turn_on: "パスワードでのサインインを再開する",
    turn_off_hint: "停止する前に、ご自身が{name}でサインインできることを確認してください。{name}が使えなくなった場合は、サーバーで `watasu sign-in allow-passwords` を実行するとパスワードでのサインインが再開されます。",
    not_configured: "シングルサインオンが設定されていないため、メンバーはパスワードでサインインします。",
    policy_saved: "サインイン方法を保存しました。",
    invite_lead: "このチームではシングルサインオンでサインインします。下のボタンから招待を受けてください。",
    account_hint: "このチームではシングルサインオンでサインインします。パスワードは停止されています。",
};
