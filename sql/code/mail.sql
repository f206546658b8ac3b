-- Outgoing e-mail: the worker's mailer delivers pending rows of outgoing_emails over SMTP.

-- Wakes the worker's mailer at once instead of at its next poll.
CREATE FUNCTION outgoing_emails_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outgoing_email', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outgoing_emails_notify AFTER INSERT ON outgoing_emails
  FOR EACH STATEMENT EXECUTE FUNCTION outgoing_emails_notify();
