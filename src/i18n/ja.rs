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
        title: "試行回数が多すぎます", body: "少し時間をおいてから、もう一度お試しください。"
    },
    error_internal: ErrorText {
        title: "サーバー側で問題が発生しました",
        body: "お客様の操作が原因ではありません。少し時間をおいてからお試しください。繰り返し起きる場合は、下の番号を送った方にお伝えください。",
    },
    error_unavailable: ErrorText {
        title: "ただいま一時的に利用できません",
        body: "1分ほどしてからもう一度お試しください。データは失われていません。",
    },
    share_not_available: ErrorText {
        title: "このリンクは利用できません",
        body: "リンクが間違っているか、有効期限が切れたか、送った方が共有を終了した可能性があります。送った方に新しいリンクを依頼してください。",
    },
    share_already_downloaded: ErrorText {
        title: "このファイルはすでにダウンロードされています",
        body: "ファイルは1回だけダウンロードできます。もう一度必要な場合は、送った方に再度共有してもらってください。",
    },
    share_locked: ErrorText {
        title: "この共有はロックされています",
        body: "間違ったコードが何度も入力されたため、コードを受け付けなくなりました。送った方に、ロックの解除か新しいリンクの送付を依頼してください。",
    },
    verify_first: ErrorText {
        title: "先にメールアドレスの確認をお願いします",
        body: "安全のため、メールで届いたコードを入力してからダウンロードできます。リンクをもう一度開き、手順に沿って進めてください。",
    },
    landing_title: "ファイルが届いています",
    sent_by_before: "",
    sent_by_after: " さんから、あなた宛てのファイルです。",
    landing_explain: "安全のため、まず正しい方に届いたことを確認します。ファイルの送り先として登録されたメールアドレスに、6桁の確認コードをお送りします。",
    email_label: "あなたのメールアドレス",
    email_hint: "このリンクを受け取ったメールアドレスを入力してください。",
    email_submit: "確認コードを送る",
    code_sent_title: "メールをご確認ください",
    code_sent_body: "入力されたアドレスがファイルの送り先と同じなら、そのアドレスに6桁の確認コードを送りました。コードは10分間有効です。",
    spam_hint: "数分たってもメールが届かない場合は、迷惑メールフォルダもご確認ください。",
    code_label: "6桁の確認コード",
    code_submit: "確認する",
    code_wrong: "コードが違います。入力できる残り回数:",
    code_malformed: "メールに書かれた6桁の数字を入力してください。",
    code_dead: "このコードは使えなくなりました（期限切れ、使用済み、または入力ミスが多すぎます）。新しいコードを送ってください。",
    resend_code: "新しいコードを送る",
    other_address: "別のメールアドレスを入力する",
    download_title: "ファイルを受け取れます",
    file_name_label: "ファイル名",
    file_size_label: "サイズ",
    file_sha256_label: "SHA-256（ファイルが壊れていないかの確認用）",
    message_label: "送った方からのメッセージ",
    expires_label: "受け取り期限",
    download_once_warning: "ダウンロードできるのは1回だけです。ダウンロード後はリンクが使えなくなり、ファイルはサーバーから削除されます。",
    download_started: "ダウンロードを開始しました。端末の「ダウンロード」フォルダ（iPhone は「ファイル」アプリ）をご確認ください。このページをもう一度使う必要はありません。",
    file_details: "ファイルの詳細",
    download_button: "ファイルをダウンロード",
    mail_code_subject: "watasu 確認コードのお知らせ",
    mail_code_intro: "確認コードは次のとおりです:",
    mail_code_validity: "有効期限は10分です。コードを請求したページに入力してください。",
    mail_code_ignore: "このコードに心当たりがない場合は、このメールを無視してください。",
    mail_notify_subject_after: " さんからファイルが届いています",
    mail_notify_open: "次のリンクを開いて受け取ってください:",
    mail_notify_steps: "受け取りの際は、メールアドレス宛てに届く確認コードで本人確認を行います。ファイルは1回だけダウンロードできます。",
    mail_notify_until: "リンクの有効期限:",
    mail_notify_message: "メッセージ:",
    mail_footer: "このメールは、ファイルを安全に受け渡すサービス watasu から送信されています。",
};
