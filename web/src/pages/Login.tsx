/** The login page: email + password (a session cookie), or an API key kept in this browser.
 * Shown instead of any screen that needs a session, at the same URL. */
import { useState } from "react";
import { ApiError } from "../api";
import { signinNotice } from "../state/access";
import { authStore } from "../state/auth";
import { errorText } from "../ui/format";

function loginError(e: unknown): string {
  if (e instanceof ApiError && e.status === 401) return "Wrong email or password (or the account is disabled).";
  if (e instanceof ApiError && e.status === 429) return "Too many attempts: wait a minute and try again.";
  return `Could not sign in: ${errorText(e)}`;
}

export function LoginPage({ reason }: { reason: "none" | "expired" }) {
  const [mode, setMode] = useState<"password" | "key">("password");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const linkNotice = signinNotice(location.search);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setError(null);
    if (mode === "password" && (!email.trim() || !password)) return setError("Enter your email and password.");
    if (mode === "key" && !key.trim()) return setError("Paste an API key.");
    setBusy(true);
    try {
      if (mode === "password") await authStore.signIn(email.trim(), password);
      else await authStore.useKey(key);
      if (location.search) history.replaceState(null, "", location.pathname); // drop ?signin=...
    } catch (err) {
      setError(mode === "key" && err instanceof ApiError && err.status === 401 ? "The server rejected this key (revoked, or mistyped)." : loginError(err));
      setPassword("");
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="login-page" data-testid="login-page">
      <form className="login-card" onSubmit={submit} aria-labelledby="login-title" noValidate>
        <h1 id="login-title">
          Sign in to <span className="brand-text">plait</span>
        </h1>
        {reason === "expired" && (
          <p className="banner" role="status" data-testid="login-expired">
            Your session ended. Sign in again to continue where you were.
          </p>
        )}
        {linkNotice && (
          <p className="banner error" role="alert" data-testid="login-link-notice">
            {linkNotice}
          </p>
        )}
        {mode === "password" ? (
          <>
            <label htmlFor="login-email">Email</label>
            <input id="login-email" data-testid="login-email" type="email" autoComplete="username" autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
            <label htmlFor="login-password">Password</label>
            <input id="login-password" data-testid="login-password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
          </>
        ) : (
          <>
            <label htmlFor="login-key">API key (sent as x-api-key, kept in this browser)</label>
            <input id="login-key" data-testid="login-key" type="password" autoComplete="off" autoFocus value={key} onChange={(e) => setKey(e.target.value)} />
          </>
        )}
        {error && (
          <p className="error" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy} data-testid="login-submit">
            {busy ? "Signing in…" : "Sign in"}
          </button>
          <button
            type="button"
            className="link"
            data-testid="login-mode"
            onClick={() => {
              setMode(mode === "password" ? "key" : "password");
              setError(null);
            }}
          >
            {mode === "password" ? "Use an API key instead" : "Use email and password"}
          </button>
        </div>
        <p className="muted small-text">
          Running plait on this machine? <code>plait serve</code> prints a sign-in link (<code>http://127.0.0.1:8000/?token=…</code>) that signs you in as the local admin.
        </p>
      </form>
    </div>
  );
}
