-- GET one page (a share's landing page, a sender's share list) as returning visitors: each
-- request carries one of the prepared session cookies in turn. Arguments: the path, the file of cookies (one per line).
local path
local cookies = {}
local n = 0

function init(args)
  path = args[1]
  for line in io.lines(args[2]) do
    cookies[#cookies + 1] = line
  end
end

function request()
  n = n + 1
  return wrk.format("GET", path, { ["Cookie"] = cookies[n % #cookies + 1] })
end
