-- Languages follow the person. `users.lang` (from 0001) is now the language of the mails watasu
-- sends about the account (a deletion's last mail, wrong sign-in codes, …): set to the page
-- language at sign-up and changed on the account page. The new-share form's mail language starts
-- from the page language and then from the sender's last choice, kept here.
ALTER TABLE users ADD COLUMN share_mail_lang TEXT CHECK (share_mail_lang IN ('ja', 'en')); -- the recipient mail language last chosen; NULL: none yet
