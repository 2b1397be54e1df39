//! The words of what every page shares: the signed-in navigation, the error pages' way back, and
//! the account's time zone choice.

pub struct ChromeText {
    /// The signed-in navigation's landmark name (the language switch is the other one).
    pub nav_label: &'static str,
    /// The summary of the menu that holds the less frequent links on a phone.
    pub nav_menu: &'static str,
    /// An error page's link back to the page the person was on.
    pub error_back: &'static str,
    /// An error page's link to the dashboard.
    pub error_back_dashboard: &'static str,
    pub time_zone_title: &'static str,
    pub time_zone_label: &'static str,
    pub time_zone_hint: &'static str,
    /// The choice of no zone: times follow the page's language.
    pub time_zone_by_language: &'static str,
    pub time_zone_submit: &'static str,
    /// "{zone}" is the saved zone's name, or `time_zone_by_language`.
    pub time_zone_saved: &'static str,
    pub time_zone_invalid: &'static str,
    /// Shown by the script when it offered the browser's zone as the choice.
    pub time_zone_from_browser: &'static str,
}

pub const EN: ChromeText = ChromeText {
    nav_label: "Sender menu",
    nav_menu: "Menu",
    error_back: "Go back",
    error_back_dashboard: "Back to Files you sent",
    time_zone_title: "Time zone",
    time_zone_label: "Show times in",
    time_zone_hint: "Used for every time on your pages and in the mails you get from watasu.",
    time_zone_by_language: "By the page language (Japan time in Japanese, UTC in English)",
    time_zone_submit: "Save the time zone",
    time_zone_saved: "Time zone saved: {zone}.",
    time_zone_invalid: "Choose a time zone from the list.",
    time_zone_from_browser: "Your browser's time zone is selected. Save it to use it.",
};

pub const JA: ChromeText = ChromeText {
    nav_label: "送信者メニュー",
    nav_menu: "メニュー",
    error_back: "前のページに戻る",
    error_back_dashboard: "送信したファイルの一覧に戻る",
    time_zone_title: "タイムゾーン",
    time_zone_label: "時刻の表示",
    time_zone_hint: "ページに表示する時刻と、watasu から届くメールの時刻に使います。",
    time_zone_by_language: "ページの言語に合わせる（日本語は日本時間、英語は UTC）",
    time_zone_submit: "タイムゾーンを保存",
    time_zone_saved: "タイムゾーンを保存しました（{zone}）。",
    time_zone_invalid: "一覧からタイムゾーンを選んでください。",
    time_zone_from_browser: "ブラウザーのタイムゾーンを選択しました。保存すると使われます。",
};
