//! 日本語の文言。

use super::{ErrorText, Text};

pub const TEXT: Text = Text {
    lang_name: "日本語",
    site_tagline: "ひとつのファイルを、ひとりの相手へ安全に。",
    skip_to_content: "本文へ移動",
    language_switch_label: "言語",
    footer: "watasu — ファイルはダウンロード後または期限切れ後にサーバーから削除されます。",
    home_title: "ひとつのファイルを、ひとりの相手へ安全に",
    home_lead: "watasu は、ファイルを決まった1人にだけ届けます。リンクだけではダウンロードできません。受け取る方は、登録されたメールアドレスに届く確認コードを入力してから、1回だけダウンロードできます。",
    home_steps: [
        "送る人がファイルをアップロードし、受け取る方のメールアドレスを指定します。",
        "受け取る方はリンクを開き、そのアドレスに届いた確認コードを入力します。",
        "ファイルは1回だけダウンロードでき、その後サーバーから削除されます。",
    ],
    error_request_id: "お問い合わせ用の番号",
    error_back_home: "トップページへ戻る",
    error_bad_request: ErrorText {
        title: "リクエストの内容を読み取れませんでした",
        body: "送信された内容に正しくない部分があります。前の画面に戻り、入力内容を確かめてからもう一度お試しください。",
    },
    error_forbidden: ErrorText {
        title: "この操作は受け付けられませんでした",
        body: "フォームの有効期限が切れたか、別のサイトから送信された可能性があります。ページを再読み込みしてから、もう一度お試しください。",
    },
    error_not_found: ErrorText {
        title: "このページは利用できません",
        body: "アドレスが間違っているか、ページがすでに存在しません。受け取ったリンクをご確認ください。",
    },
    error_method_not_allowed: ErrorText {
        title: "このページはその方法では使えません",
        body: "リンクやボタンからページを開いてください。",
    },
    error_gone: ErrorText {
        title: "これはもう利用できません",
        body: "すでに使用されたか、終了しています。送った方に、もう一度共有してもらうようお伝えください。",
    },
    error_too_large: ErrorText {
        title: "送信された内容が大きすぎます",
        body: "より小さいファイルを選ぶか、入力内容を短くしてから、もう一度お試しください。",
    },
    error_too_many: ErrorText {
        title: "試行回数が多すぎます",
        body: "少し時間をおいてから、もう一度お試しください。",
    },
    error_internal: ErrorText {
        title: "サーバー側で問題が発生しました",
        body: "お客様の操作が原因ではありません。少し時間をおいてからお試しください。繰り返し起きる場合は、下の番号を送った方にお伝えください。",
    },
    error_unavailable: ErrorText {
        title: "ただいま一時的に利用できません",
        body: "1分ほどしてからもう一度お試しください。データは失われていません。",
    },
};
