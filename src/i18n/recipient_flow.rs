//! The words of the recipient's flow that say what just happened: the address a code went to,
//! a new code sent or a limit reached, the warning before the link locks, the one-download
//! notes, and the pages that end the flow ("already downloaded", "wait"). `{time}`, `{minutes}`
//! and `{n}` are filled in by the page; `|` marks where a Japanese line may break (the macro in
//! `templates/recipient/_phrases.html`), and is never shown.

use super::Lang;

pub struct RecipientFlowText {
    /// Before the typed address (which goes on a line of its own).
    pub code_sent_to: &'static str,
    /// After it: the code only went there if it is the registered address.
    pub code_sent_if: &'static str,
    /// "{time}": when the new code was asked for.
    pub code_resent: &'static str,
    /// "{minutes}": whole minutes, at least 1.
    pub code_limit_reached: &'static str,
    pub code_limit_over: &'static str,
    /// "{n}" is 1: the next wrong code locks the link.
    pub lock_warning_one: &'static str,
    /// "{n}" is 2 or more.
    pub lock_warning_many: &'static str,
    /// On the email step, before any code: one download, on the device that keeps the file.
    pub once_before: &'static str,
    /// Next to the download button, for browsers without JavaScript too.
    pub after_press: &'static str,
    /// The 410 page's heading.
    pub downloaded_title: &'static str,
    /// The 410 page for the browser that downloaded: "{time}" is when.
    pub downloaded_here: &'static str,
    /// The 410 page for anyone else holding the link.
    pub downloaded_elsewhere: &'static str,
    pub wait_title: &'static str,
    /// "{minutes}": whole minutes, at least 1.
    pub wait_body: &'static str,
    pub back_to_link: &'static str,
}

pub const EN: RecipientFlowText = RecipientFlowText {
    code_sent_to: concat!("We sent a ", crate::code_length!(), "-digit code to the address you entered:"),
    code_sent_if: concat!(
        "if it is the address this file was sent to. The code is valid for ",
        crate::code_validity_minutes!(),
        " minutes."
    ),
    code_resent: "A new code was sent at {time}. Earlier codes no longer work.",
    code_limit_reached: "You have asked for a code too many times. You can ask for a new one in {minutes} min.",
    code_limit_over: "You can ask for a new code again now.",
    lock_warning_one: "Careful: one more wrong code locks this link. After that, only the person who sent it can open it again.",
    lock_warning_many: "Careful: {n} more wrong codes lock this link. After that, only the person who sent it can open it again.",
    once_before: "This file can be downloaded only once. Open this link on the device where you want to keep the file.",
    after_press: "After you press the button, the file is saved in your Downloads folder (on an iPhone: the Files app).",
    downloaded_title: "This file has already been downloaded",
    downloaded_here: "This browser downloaded it on {time}. Look in your Downloads folder (on an iPhone: the Files app). If you need it again, ask the person who sent it to share it again.",
    downloaded_elsewhere: "Each file can be downloaded only once. If you did not download it yourself, or you need it again, contact the person who sent it.",
    wait_title: "Please wait before asking for another code",
    wait_body: "For safety, a code can be asked for only a few times in a row. You can ask again in {minutes} min.",
    back_to_link: "Back to the link",
};

pub const JA: RecipientFlowText = RecipientFlowText {
    code_sent_to: concat!("次の|アドレスに、|", crate::code_length!(), "桁の|確認コードを|お送りしました。"),
    code_sent_if: concat!(
        "ただし、|このファイルの|送り先と|同じ|アドレスの|場合に|限ります。|コードは|",
        crate::code_validity_minutes!(),
        "分間|有効です。"
    ),
    code_resent: "{time}に|新しい|コードを|お送りしました。|それより|前の|コードは|使えません。",
    code_limit_reached: "コードの|請求回数が|上限に|達しました。|あと{minutes}分で|新しい|コードを|請求できます。",
    code_limit_over: "もう一度、|新しい|コードを|請求できます。",
    lock_warning_one: "ご注意ください。|あと1回|コードを|間違えると、|このリンクは|ロックされ、|送った方に|解除してもらうまで|使えなくなります。",
    lock_warning_many: "ご注意ください。|あと{n}回|コードを|間違えると、|このリンクは|ロックされ、|送った方に|解除してもらうまで|使えなくなります。",
    once_before: "このファイルは|1回だけ|ダウンロードできます。|ファイルを|残しておきたい|端末で、|このリンクを|開いてください。",
    after_press: "ボタンを|押すと、|ファイルは|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）に|保存されます。",
    downloaded_title: "このファイルは|すでに|ダウンロード|されています",
    downloaded_here: "このブラウザで|{time}に|ダウンロード済みです。|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）を|ご確認ください。|もう一度|必要な場合は、|送った方に|再度|共有してもらってください。",
    downloaded_elsewhere: "ファイルは|1回だけ|ダウンロードできます。|ご自身で|ダウンロードしていない場合や、|もう一度|必要な場合は、|送った方に|ご連絡ください。",
    wait_title: "確認コードの|請求が|多すぎます",
    wait_body: "安全のため、|確認コードを|続けて|請求できる|回数には|上限が|あります。|あと{minutes}分たつと、|もう一度|請求できます。",
    back_to_link: "リンクのページに戻る",
};

impl Lang {
    /// The recipient flow's words in this language.
    pub fn recipient_flow(self) -> &'static RecipientFlowText {
        match self {
            Lang::Ja => &JA,
            Lang::En => &EN,
        }
    }
}
