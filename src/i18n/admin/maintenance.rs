//! The words for the maintenance ledger's codes (run kinds, triggers, states, row outcomes, the
//! kinds of rows a run handles and the reasons in a run's note), English and Japanese side by
//! side, so the admin pages never show a raw code.

use crate::i18n::Lang;
use crate::maintenance::{Kind, Note, Outcome, Reason, RunState, Target, Trigger};

/// One language's words for the ledger's codes.
pub struct MaintenanceText(Lang);

pub const EN: MaintenanceText = MaintenanceText(Lang::En);
pub const JA: MaintenanceText = MaintenanceText(Lang::Ja);

impl MaintenanceText {
    fn pick(&self, [en, ja]: [&'static str; 2]) -> &'static str {
        match self.0 {
            Lang::En => en,
            Lang::Ja => ja,
        }
    }

    pub fn kind(&self, kind: Kind) -> &'static str {
        self.pick(match kind {
            Kind::All => ["All sweeps", "すべての処理"],
            Kind::Sessions => ["Sessions", "セッション"],
            Kind::Codes => ["Codes", "確認コード"],
            Kind::Invitations => ["Invitations", "招待"],
            Kind::Outbox => ["Outbox", "送信メール"],
            Kind::RateLimits => ["Rate limits", "回数制限の記録"],
            Kind::ShareRetention => ["Share retention", "共有の保存期間"],
            Kind::WebhookMessages => ["Webhook messages", "Webhook メッセージ"],
            Kind::ShareGc => ["File clean-up", "ファイルの後片付け"],
            Kind::Leftovers => ["Leftover files", "残ったファイルの掃除"],
        })
    }

    pub fn trigger(&self, trigger: Trigger) -> &'static str {
        self.pick(match trigger {
            Trigger::Timer => ["Timer", "定期実行"],
            Trigger::Request => ["After a request", "リクエスト後"],
            Trigger::Http => ["HTTP trigger", "HTTP からの依頼"],
            Trigger::Cli => ["Command line", "コマンドライン"],
        })
    }

    pub fn state(&self, state: RunState) -> &'static str {
        self.pick(match state {
            RunState::Accepted => ["Accepted", "受付済み"],
            RunState::Running => ["Running", "実行中"],
            RunState::Succeeded => ["Succeeded", "成功"],
            RunState::Partial => ["Partial", "一部失敗"],
            RunState::Failed => ["Failed", "失敗"],
        })
    }

    pub fn outcome(&self, outcome: Outcome) -> &'static str {
        self.pick(match outcome {
            Outcome::Deleted => ["Deleted", "削除"],
            Outcome::Skipped => ["Skipped", "対象外"],
            Outcome::AlreadyGone => ["Already gone", "既になし"],
            Outcome::Failed => ["Failed", "失敗"],
        })
    }

    pub fn target(&self, target: Target) -> &'static str {
        self.pick(match target {
            Target::Session => ["Session", "セッション"],
            Target::Code => ["Code", "確認コード"],
            Target::Invitation => ["Invitation", "招待"],
            Target::Mail => ["Mail", "メール"],
            Target::RateLimitHit => ["Rate-limit entry", "回数制限の記録"],
            Target::SharePersonalData => ["Share's personal data", "共有の個人データ"],
            Target::WebhookMessage => ["Webhook message", "Webhook メッセージ"],
            Target::Share => ["Share", "共有"],
            Target::Upload => ["Upload", "アップロード"],
        })
    }

    /// A run's note: each part's sweep and reason in words.
    pub fn note(&self, note: &Note) -> String {
        let part = |part: &crate::maintenance::NotePart| match part.sweep {
            Some(kind) => format!("{}: {}", self.kind(kind), self.reason(&part.reason)),
            None => self.reason(&part.reason),
        };
        note.parts().iter().map(part).collect::<Vec<_>>().join("; ")
    }

    fn reason(&self, reason: &Reason) -> String {
        let words = match reason {
            Reason::Busy => ["another run holds it", "別の実行が処理中でした"],
            Reason::BatchCap => ["stopped at the batch cap", "一度に処理する件数の上限で止めました"],
            Reason::TimeCap => ["stopped at the time cap", "処理時間の上限で止めました"],
            Reason::LeaseLost => ["lost its lease", "処理権を失いました"],
            Reason::DatabaseUnavailable => ["database unavailable", "データベースに接続できませんでした"],
            Reason::DatabaseError(code) => {
                let words = self.pick(["database error", "データベースのエラー"]);
                return code.as_ref().map_or_else(|| words.to_owned(), |code| format!("{words} {code}"));
            }
            Reason::Abandoned => {
                ["abandoned: the run stopped without finishing", "中断: 実行が完了しないまま止まりました"]
            }
            Reason::LeaseRanOut => ["abandoned: its lease ran out", "中断: 処理権の期限が切れました"],
            Reason::StorageError => ["storage error", "保存先のエラー"],
        };
        self.pick(words).to_owned()
    }

    /// An item's failure reason in words: `lifecycle::gc` records an I/O error kind's English
    /// text; one this version does not name stays as it is.
    pub fn item_reason<'a>(&self, reason: &'a str) -> &'a str {
        use std::io::ErrorKind::*;
        let known = [PermissionDenied, ReadOnlyFilesystem, StorageFull, TimedOut, NotFound, Other];
        let Some(kind) = known.into_iter().find(|kind| kind.to_string() == reason) else { return reason };
        let ja = match kind {
            PermissionDenied => "アクセスが拒否されました",
            ReadOnlyFilesystem => "保存先が読み取り専用です",
            StorageFull => "保存先の空き容量がありません",
            TimedOut => "時間切れになりました",
            NotFound => "ファイルが見つかりません",
            _ => "その他のエラー",
        };
        match self.0 {
            Lang::En => reason,
            Lang::Ja => ja,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maintenance::NotePart;

    #[test]
    fn every_maintenance_code_has_words_in_both_languages() {
        for lang in Lang::ALL {
            let m = &lang.text().admin.maintenance;
            let codes = [
                Kind::ALL.iter().map(|&k| (k.code(), m.kind(k))).collect::<Vec<_>>(),
                Trigger::ALL.iter().map(|&t| (t.code(), m.trigger(t))).collect(),
                RunState::ALL.iter().map(|&s| (s.code(), m.state(s))).collect(),
                Outcome::ALL.iter().map(|&o| (o.code(), m.outcome(o))).collect(),
                Target::ALL.iter().map(|&t| (t.code(), m.target(t))).collect(),
            ];
            for (code, text) in codes.concat() {
                assert!(!text.is_empty() && text != code, "{lang:?} has no words for {code:?}");
            }
        }
    }

    #[test]
    fn a_note_reads_in_japanese_and_names_kinds_in_words() {
        let ja = &Lang::Ja.text().admin.maintenance;
        let reasons = [
            Reason::Busy,
            Reason::BatchCap,
            Reason::TimeCap,
            Reason::LeaseLost,
            Reason::DatabaseUnavailable,
            Reason::DatabaseError(None),
            Reason::Abandoned,
            Reason::LeaseRanOut,
            Reason::StorageError,
        ];
        for reason in reasons {
            assert!(!ja.note(&Note::of(reason.clone())).is_ascii(), "no Japanese for {reason:?}");
        }
        let note = Note::new(vec![
            NotePart { sweep: Some(Kind::ShareGc), reason: Reason::TimeCap },
            NotePart { sweep: Some(Kind::Sessions), reason: Reason::DatabaseError(Some("40001".into())) },
        ]);
        assert_eq!(
            ja.note(&note),
            "ファイルの後片付け: 処理時間の上限で止めました; セッション: データベースのエラー 40001"
        );
        assert_eq!(
            Lang::En.text().admin.maintenance.note(&note),
            "File clean-up: stopped at the time cap; Sessions: database error 40001"
        );
    }

    #[test]
    fn the_file_clean_ups_io_failures_read_in_japanese() {
        let ja = &Lang::Ja.text().admin.maintenance;
        use std::io::ErrorKind::*;
        for kind in [PermissionDenied, ReadOnlyFilesystem, StorageFull, TimedOut, NotFound, Other] {
            assert!(!ja.item_reason(&kind.to_string()).is_ascii(), "no Japanese for {kind:?}");
        }
        let denied = PermissionDenied.to_string();
        assert_eq!(Lang::En.text().admin.maintenance.item_reason(&denied), denied);
        assert_eq!(ja.item_reason("something new"), "something new");
    }
}
