# bash completion for nichealthctl(1)

# _nichealthctl_reply COMPGEN-ARGS...: the candidates for $cur, one per line,
# so file names with spaces stay whole.
_nichealthctl_reply() {
    mapfile -t COMPREPLY < <(compgen "$@" -- "$cur")
}

_nichealthctl() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        # The far end's codes carry a colon: keep it inside the word.
        _init_completion -n : || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="status ports port cables events ack reload check wait-ready validate topology module"
    # Options of the daemon commands; every command takes them after its
    # name, none before it (nichealthctl --json status is refused).
    local common="--json --bus-address --help"
    # What ack takes after DEVICE PORT: the built-in counter table (PHY
    # statistics included) and the non-counter latches (PCIe AER, the kernel
    # log and its fatal patterns) and the far end's (peer:ROW,
    # peer-saturated:FIELD: the default far-end rows); custom counters can
    # still be typed. packaging/completion's test keeps this list whole.
    local acks="link_downed excessive_buffer_overrun_errors local_link_integrity_errors
        rnr_nak_retry_err symbol_error symbol_error_fatal link_error_recovery port_rcv_errors
        out_of_sequence local_ack_timeout_err port_xmit_discards port_xmit_wait
        roce_slow_restart carrier_changes rx_corrected_bits_phy rx_symbol_err_phy
        rx_pcs_symbol_err_phy link_down_events_phy pcie_aer kernel_log
        cmd_exec_timeout cmd_interface_stalled fw_not_responding fw_health_compromised
        fw_fatal_error fw_unrecoverable_error
        fw_health_recovery_failed pci_slot_unavailable probe_load_failed probe_failed
        pcie_slot_power_ports_down
        peer:symbol_error peer:symbol_error_fatal peer:link_error_recovery peer:link_downed
        peer:port_rcv_remote_physical_errors peer:port_xmit_constraint_errors
        peer:port_rcv_constraint_errors peer:local_link_integrity_errors
        peer:excessive_buffer_overrun_errors peer:unstable
        peer-saturated:SymbolErrorCounter peer-saturated:LinkErrorRecoveryCounter
        peer-saturated:LinkDownedCounter peer-saturated:PortRcvRemotePhysicalErrors
        peer-saturated:PortXmitConstraintErrors peer-saturated:PortRcvConstraintErrors
        peer-saturated:LocalLinkIntegrityErrors peer-saturated:ExcessiveBufferOverrunErrors"
    local ibclass=/sys/class/infiniband

    # Find the sub-command and the positional arguments after it.
    local cmd="" i
    local -a args=()
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --since|--timeout|--bus-address|--config|--state-file|--root) ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=${words[i]}; else args+=("${words[i]}"); fi ;;
        esac
    done

    case $prev in
        --since|--timeout|--bus-address) return ;;
        --config|--state-file) _nichealthctl_reply -f; return ;;
        --root) _nichealthctl_reply -d; return ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            _nichealthctl_reply -W "--help --version"
        else
            _nichealthctl_reply -W "$commands"
        fi
        return
    fi

    case $cmd in
        port|ack)
            if [[ $cur == -* ]]; then
                _nichealthctl_reply -W "$common"
                return
            fi
            case ${#args[@]} in
                0) _nichealthctl_reply -W "$(ls "$ibclass" 2>/dev/null)" ;;
                1) _nichealthctl_reply -W "$(ls "$ibclass/${args[0]}/ports" 2>/dev/null)" ;;
                2) if [[ $cmd == ack ]]; then
                       _nichealthctl_reply -W "$acks"
                       if declare -F __ltrim_colon_completions >/dev/null 2>&1; then __ltrim_colon_completions "$cur"; fi
                   fi ;;
            esac
            ;;
        events) _nichealthctl_reply -W "--since --follow -f --retry-rejected $common" ;;
        check) _nichealthctl_reply -W "--perfdata --offline --config --state-file --root $common" ;;
        wait-ready) _nichealthctl_reply -W "--timeout $common" ;;
        validate) if [[ $cur == -* ]]; then _nichealthctl_reply -W "--help"; else _nichealthctl_reply -f; fi ;;
        topology)
            if [[ ${#args[@]} -eq 0 ]]; then
                _nichealthctl_reply -W "parse collect show"
            elif [[ $cur == -* ]]; then
                case ${args[0]} in
                    collect) _nichealthctl_reply -W "--output --nvidia-smi --node-name" ;;
                    show) _nichealthctl_reply -W "--root --sysfs-root --procfs-root --config --metadata --source --all --json" ;;
                esac
            elif [[ ${args[0]} == parse ]]; then
                _nichealthctl_reply -f
            fi
            ;;
        module)
            if [[ ${#args[@]} -eq 0 ]]; then
                _nichealthctl_reply -W "decode"
            elif [[ $cur == -* ]]; then
                _nichealthctl_reply -W "--json --port-down --help"
            else
                _nichealthctl_reply -f
            fi
            ;;
        *) _nichealthctl_reply -W "$common" ;;
    esac
} && complete -F _nichealthctl nichealthctl
