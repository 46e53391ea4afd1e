-- A scripted Neovim session on a host file (a YAML agent config) against `prefixlint
-- server` (tests/server.rs runs it headless): the finding of the template embedded in it
-- is shown at the host's own line, and an unsaved edit that moves the volatile line clears it.
-- Env: PL_BIN (the binary), PL_ROOT (workspace), PL_FILE (the host), PL_LINE (the line).
local bin, root, file = os.getenv("PL_BIN"), os.getenv("PL_ROOT"), os.getenv("PL_FILE")
local line = tonumber(os.getenv("PL_LINE"))
local TIMEOUT = 60000

local function say(text)
  io.stdout:write(text .. "\n")
end

local function fail(message)
  io.stderr:write("FAIL: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "prefixlint",
    cmd = { bin, "server" },
    root_dir = root,
    init_options = { debounceMs = 50 },
  })
  if not client_id then
    return fail("the client did not start")
  end
  vim.lsp.buf_attach_client(buf, client_id)

  local function pl001()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "PL001" then
        return d
      end
    end
  end
  local function wait_for(what, predicate)
    if not vim.wait(TIMEOUT, predicate, 20) then
      fail(what .. "; diagnostics: " .. vim.inspect(vim.diagnostic.get(buf)))
    end
  end

  wait_for("PL001 on the host line", function()
    local d = pl001()
    return d ~= nil and d.lnum == line - 1
  end)
  local d = pl001()
  say("diagnostic: " .. d.code .. " line " .. (d.lnum + 1) .. " column " .. (d.col + 1) .. ": " .. vim.split(d.message, "\n")[1])

  -- Move the volatile line after the instructions (unsaved): the finding goes.
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local volatile = table.remove(lines, line)
  table.insert(lines, line + 1, volatile)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  wait_for("PL001 cleared after the move", function()
    return pl001() == nil
  end)
  say("after moving the line down: no PL001")

  vim.lsp.stop_client(client_id)
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 20)
end)
if not ok then
  fail(tostring(err))
end
vim.cmd("qall!")
