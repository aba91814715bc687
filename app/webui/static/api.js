// calmon's read API from the browser: the session's token, JSON requests, clear errors.

export const calmon = (function () {
  const TOKEN_KEY = "calmon.readToken";
  // The page lives at <root>ui/; the API at <root>v1/ (works behind a path prefix too).
  const ROOT = location.pathname.replace(/ui\/?[^/]*$/, "");

  class AuthError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function errorMessage(body, fallback) {
    return (body && body.error && body.error.message) || fallback;
  }

  // A JSON request; `json` (a body) makes it a POST, the read-only analyses' way of asking.
  async function request(path, params, json) {
    const url = new URL(ROOT + path.replace(/^\//, ""), location.origin);
    for (const [key, value] of Object.entries(params || {})) {
      // A list is the parameter repeated (also=f1&also=alerts), as the API reads lists.
      if (Array.isArray(value)) for (const item of value) url.searchParams.append(key, item);
      else if (value !== undefined && value !== null) url.searchParams.set(key, value);
    }
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const init = { headers };
    if (json !== undefined) {
      init.method = "POST";
      init.body = JSON.stringify(json);
      headers["Content-Type"] = "application/json";
    }
    const response = await fetch(url, init);
    let body;
    try {
      body = await response.json();
    } catch {
      body = null; // not JSON (a proxy's error page): the status line says what happened
    }
    if (response.status === 401 || response.status === 403) {
      throw new AuthError(response.status, errorMessage(body, response.statusText));
    }
    if (!response.ok) {
      throw new Error(`${url.pathname}: ${response.status} ${errorMessage(body, response.statusText)}`);
    }
    return body;
  }

  return {
    AuthError,
    get: (path, params) => request(path, params),
    post: (path, json, params) => request(path, params, json),
    authRequired: document.body.dataset.auth !== "disabled",
    token: () => sessionStorage.getItem(TOKEN_KEY),
    setToken: (token) => sessionStorage.setItem(TOKEN_KEY, token.trim()),
    forgetToken: () => sessionStorage.removeItem(TOKEN_KEY),
  };
})();
