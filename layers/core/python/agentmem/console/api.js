// The public REST API (docs/api.md), from the page's own origin, with the user's API key.

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

/** What a person should read for a failed call. */
export function describe(error, app) {
  if (!(error instanceof ApiError)) return `The server could not be reached (${error.message}).`;
  if (error.status === 401) {
    return `The API key was not accepted (401 ${error.code}): ${error.message}. Check the key and sign in again.`;
  }
  if (error.status === 403) {
    return `This API key may not use app “${app}” (403 ${error.code}): ${error.message}.`;
  }
  const id = error.requestId ? ` [request ${error.requestId}]` : '';
  return `${error.message} (${error.status} ${error.code})${id}`;
}

export class Api {
  /** `base`: the URL the API's paths are resolved against (the page's folder: `/` locally, `/prod/` behind a stage). */
  constructor(base, key) {
    this.base = base;
    this.key = key || '';
  }

  static scope(app, user) {
    return `v1/apps/${encodeURIComponent(app)}/users/${encodeURIComponent(user)}`;
  }

  async request(method, path, { query, body } = {}) {
    const url = new URL(path, this.base);
    for (const [name, value] of Object.entries(query || {})) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (item !== undefined && item !== null && item !== '') url.searchParams.append(name, String(item));
      }
    }
    const headers = { accept: 'application/json' };
    if (this.key) headers['x-api-key'] = this.key;
    const init = { method, headers, credentials: 'omit', cache: 'no-store' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const error = data && data.error ? data.error : {};
      throw new ApiError(
        response.status,
        error.code || `http_${response.status}`,
        error.message || response.statusText || 'the request failed',
        error.request_id,
      );
    }
    return data;
  }

  get(path, query) {
    return this.request('GET', path, { query });
  }

  post(path, body, query) {
    return this.request('POST', path, { body, query });
  }

  delete(path, query) {
    return this.request('DELETE', path, { query });
  }
}
