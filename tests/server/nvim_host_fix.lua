-- A scripted Neovim session on a `.prompty` file against `prefixlint server` (tests/server.rs
-- runs it headless): the PL001 of its body is shown at the host's line, its code actions
-- include the move into the last user turn, and applying that action gives the text
-- `check --fix --unsafe-fixes` writes (the same code makes and verifies both).
-- Env: PL_BIN (the binary), PL_ROOT (workspace), PL_FILE (the host), PL_LINE (the line),
-- PL_FIXED (a file with what `check --fix --unsafe-fixes` writes for it).
local bin, root, file = os.getenv("PL_BIN"), os.getenv("PL_ROOT"), os.getenv("PL_FILE")
local line = tonumber(os.getenv("PL_LINE"))
local fixed_file = os.getenv("PL_FIXED")
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
  local client = vim.lsp.get_client_by_id(client_id)

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
  say("diagnostic: PL001 line " .. line)

  vim.api.nvim_win_set_cursor(0, { line, 0 })
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf) }
  local response = client.request_sync("textDocument/codeAction", params, TIMEOUT, buf)
  if not response or response.err then
    return fail("code actions failed: " .. vim.inspect(response))
  end
  local move
  for _, action in ipairs(response.result or {}) do
    say("action: " .. action.title)
    if action.title:find("Move line", 1, true) then
      move = action
    end
  end
  if not move then
    return fail("no move action")
  end

  vim.lsp.util.apply_workspace_edit(move.edit, client.offset_encoding)
  local expected = table.concat(vim.fn.readfile(fixed_file), "\n")
  local now = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if now ~= expected then
    return fail("the move action's text differs from check --fix's:\n" .. now .. "\n---\n" .. expected)
  end
  wait_for("PL001 cleared by the move action", function()
    return pl001() == nil
  end)
  say("after the move action: no PL001, the text check --fix writes")

  vim.lsp.stop_client(client_id)
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 20)
end)
if not ok then
  fail(tostring(err))
end
vim.cmd("qall!")
