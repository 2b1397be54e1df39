//! The words of the resumable uploader on the new-share page. The script reads them from the
//! form's `data-` attributes, so every sentence is written here once per language; `{sent}`,
//! `{total}` and `{minutes}` are filled in by the script.

pub struct UploaderText {
    pub pause: &'static str,
    pub resume: &'static str,
    pub cancel: &'static str,
    pub progress_label: &'static str,
    /// "{sent} of {total}".
    pub progress: &'static str,
    /// "{minutes}" is a whole number of minutes, at least 1.
    pub minutes_left: &'static str,
    pub under_a_minute: &'static str,
    pub resuming: &'static str,
    pub paused: &'static str,
    pub retrying: &'static str,
    pub offline: &'static str,
    pub failed: &'static str,
    pub too_large: &'static str,
    pub no_room: &'static str,
    pub signed_out: &'static str,
    pub finishing: &'static str,
    pub cancelled: &'static str,
    /// The word for a size under 1 KB, as the server writes it (`format::human_size`).
    pub bytes_unit: &'static str,
}

pub const EN: UploaderText = UploaderText {
    pause: "Pause",
    resume: "Resume",
    cancel: "Cancel upload",
    progress_label: "Upload progress",
    progress: "{sent} of {total}",
    minutes_left: "about {minutes} min left",
    under_a_minute: "less than a minute left",
    resuming: "Continuing your earlier upload of this file.",
    paused: "Paused. Press Resume to go on; the part already sent is kept for 24 hours.",
    retrying: "The connection dropped. Trying again…",
    offline: "You are offline. The upload goes on by itself when the connection is back.",
    failed: "The upload stopped. Press Resume to go on from where it stopped.",
    too_large: "This file is larger than the limit.",
    no_room: "There is no room for this upload now: your unfinished uploads hold the space. They are deleted 24 hours after they stop.",
    signed_out: "You are signed out. Sign in again in a new tab, then press Resume.",
    finishing: "Upload complete. Creating the share…",
    cancelled: "The upload was cancelled and deleted from the server.",
    bytes_unit: "bytes",
};

pub const JA: UploaderText = UploaderText {
    pause: "一時停止",
    resume: "再開",
    cancel: "アップロードを中止",
    progress_label: "アップロードの進み具合",
    progress: "{total} 中 {sent}",
    minutes_left: "残り約 {minutes} 分",
    under_a_minute: "残り 1 分未満",
    resuming: "このファイルの前回のアップロードを続きから再開します。",
    paused: "一時停止中です。「再開」で続きを送ります。送った分は 24 時間保存されます。",
    retrying: "接続が切れました。もう一度試しています…",
    offline: "オフラインです。接続が戻ると自動で続きを送ります。",
    failed: "アップロードが止まりました。「再開」で止まったところから続けます。",
    too_large: "このファイルは上限より大きいです。",
    no_room: "いまはこのアップロードを保存できません。途中で止まったアップロードが容量を使っています。止まってから 24 時間で削除されます。",
    signed_out: "サインアウトしています。別のタブでサインインし直してから「再開」を押してください。",
    finishing: "アップロードが終わりました。共有を作成しています…",
    cancelled: "アップロードを中止し、サーバーから削除しました。",
    bytes_unit: "バイト",
};
