-- POST the right code, each request for another share and browser session, as a recipient who
-- typed the code from the mail does. Arguments: the file of prepared submissions (path, cookie,
-- CSRF token, code per line), the number of wrk threads. Each thread takes every n-th line; a
-- thread that runs out starts over, and those repeats answer 403 (the session was regenerated),
-- which wrk counts as errors.
local requests = {}
local n = 0
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  local threads = tonumber(args[2])
  local i = 0
  for line in io.lines(args[1]) do
    if i % threads == id then
      local path, cookie, csrf, code = line:match("^(%S+) (%S+) (%S+) (%S+)$")
      requests[#requests + 1] = wrk.format("POST", path, {
        ["Cookie"] = cookie,
        ["Content-Type"] = "application/x-www-form-urlencoded",
        ["Sec-Fetch-Site"] = "same-origin",
      }, "csrf_token=" .. csrf .. "&code=" .. code)
    end
    i = i + 1
  end
end

function request()
  n = n + 1
  return requests[(n - 1) % #requests + 1]
end
