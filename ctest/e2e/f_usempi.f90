! Fortran with `use mpi` (2 ranks): MPI_SENDRECV, persistent MPI_SEND_INIT / MPI_RECV_INIT
! with MPI_STARTALL + MPI_WAITALL, MPI_TESTANY (MPI_STATUS_IGNORE), MPI_WAITSOME (real
! statuses), MPI_GATHER with MPI_IN_PLACE at the root, MPI_SCATTER, MPI_ALLGATHER, a derived
! MPI_TYPE_VECTOR send (bytes = data size, not extent), and MPI_COMM_SPLIT with an
! MPI_ALLREDUCE on the split communicator.
program f_usempi
  use mpi
  use invmw_expect
  implicit none
  integer :: ierr, rank, nprocs, peer, i, idx, outcount, sub, vec, srank
  integer :: reqs(4), pr(2), indices(4), statuses(MPI_STATUS_SIZE, 4)
  logical :: flag
  integer :: ncalls
  double precision :: a(400), b(400)
  integer :: iv(40), jv(40)

  call MPI_INIT(ierr)
  call ex_call('MPI_Init', 0, 0)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 2) stop 2
  peer = 1 - rank
  a = rank + 1
  iv = rank + 1

  ! Sendrecv: rank r sends 5 + 3r integers.
  call MPI_SENDRECV(iv, 5 + 3*rank, MPI_INTEGER, peer, 1, jv, 40, MPI_INTEGER, peer, 1, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call ex_call('MPI_Sendrecv', (5 + 3*rank)*4, (5 + 3*peer)*4)

  ! Persistent: 3 rounds of Startall on (recv, send) of 20 doubles.
  call MPI_RECV_INIT(b, 100, MPI_DOUBLE_PRECISION, peer, 2, MPI_COMM_WORLD, pr(1), ierr)
  call ex_call('MPI_Recv_init', 0, 0)
  call MPI_SEND_INIT(a, 20, MPI_DOUBLE_PRECISION, peer, 2, MPI_COMM_WORLD, pr(2), ierr)
  call ex_call('MPI_Send_init', 0, 0)
  do i = 1, 3
    call MPI_STARTALL(2, pr, ierr)
    call MPI_WAITALL(2, pr, MPI_STATUSES_IGNORE, ierr)
    call ex_call('MPI_Startall', 20*8, 20*8)
    call ex_call('MPI_Waitall', 0, 0)
  end do
  call MPI_REQUEST_FREE(pr(1), ierr)
  call MPI_REQUEST_FREE(pr(2), ierr)
  call ex_add('MPI_Request_free', 2_8, 0_8, 0_8)

  ! Testany on 2 receives of 7 and 9 integers; sends completed by MPI_WAITALL.
  call MPI_IRECV(jv, 40, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call ex_call('MPI_Irecv', 0, 7*4)
  call MPI_IRECV(jv(21), 20, MPI_INTEGER, peer, 4, MPI_COMM_WORLD, reqs(2), ierr)
  call ex_call('MPI_Irecv', 0, 9*4)
  call MPI_ISEND(iv, 7, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, reqs(3), ierr)
  call ex_call('MPI_Isend', 7*4, 0)
  call MPI_ISEND(iv, 9, MPI_INTEGER, peer, 4, MPI_COMM_WORLD, reqs(4), ierr)
  call ex_call('MPI_Isend', 9*4, 0)
  ! Loop until both requests are MPI_REQUEST_NULL (not on index == MPI_UNDEFINED: MPICH
  ! 4.0.2's Fortran MPI_TESTANY returns MPI_UNDEFINED + 1 when no request is active).
  ncalls = 0
  do while (any(reqs(1:2) /= MPI_REQUEST_NULL))
    call MPI_TESTANY(2, reqs, idx, flag, MPI_STATUS_IGNORE, ierr)
    ncalls = ncalls + 1
  end do
  call ex_add('MPI_Testany', int(ncalls, 8), 0_8, 0_8)
  call MPI_WAITALL(2, reqs(3:4), MPI_STATUSES_IGNORE, ierr)
  call ex_call('MPI_Waitall', 0, 0)

  ! Waitsome on 2 receives of 11 and 13 doubles.
  call MPI_IRECV(b, 100, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call ex_call('MPI_Irecv', 0, 11*8)
  call MPI_IRECV(b(101), 100, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call ex_call('MPI_Irecv', 0, 13*8)
  call MPI_ISEND(a, 11, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(3), ierr)
  call ex_call('MPI_Isend', 11*8, 0)
  call MPI_ISEND(a, 13, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(4), ierr)
  call ex_call('MPI_Isend', 13*8, 0)
  ncalls = 0
  i = 0
  do while (i < 2)
    call MPI_WAITSOME(2, reqs, outcount, indices, statuses, ierr)
    ncalls = ncalls + 1
    i = i + outcount
    if (statuses(MPI_SOURCE, 1) /= peer) stop 3
  end do
  call ex_add('MPI_Waitsome', int(ncalls, 8), 0_8, 0_8)
  call MPI_WAITALL(2, reqs(3:4), MPI_STATUSES_IGNORE, ierr)
  call ex_call('MPI_Waitall', 0, 0)

  ! Gather 6 doubles to rank 1 with MPI_IN_PLACE at the root; Scatter 4 integers from 0.
  if (rank == 1) then
    call MPI_GATHER(MPI_IN_PLACE, 6, MPI_DOUBLE_PRECISION, a, 6, MPI_DOUBLE_PRECISION, 1, &
                    MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Gather', 0, 2*6*8)
  else
    call MPI_GATHER(a, 6, MPI_DOUBLE_PRECISION, b, 6, MPI_DOUBLE_PRECISION, 1, &
                    MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Gather', 6*8, 0)
  end if
  call MPI_SCATTER(iv, 4, MPI_INTEGER, jv, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call ex_call('MPI_Scatter', 2*4*4, 4*4)
  else
    call ex_call('MPI_Scatter', 0, 4*4)
  end if
  call MPI_ALLGATHER(a, 3, MPI_DOUBLE_PRECISION, b, 3, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call ex_call('MPI_Allgather', 3*8, 2*3*8)

  ! Vector type: 5 blocks of 2 doubles with stride 4 = 80 bytes of data (extent 136).
  call MPI_TYPE_VECTOR(5, 2, 4, MPI_DOUBLE_PRECISION, vec, ierr)
  call MPI_TYPE_COMMIT(vec, ierr)
  if (rank == 0) then
    call MPI_SEND(a, 2, vec, 1, 7, MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Send', 2*80, 0)
  else
    call MPI_RECV(b, 400, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call ex_call('MPI_Recv', 0, 2*80)
  end if
  call MPI_TYPE_FREE(vec, ierr)
  call ex_call('MPI_Type_free', 0, 0)

  ! Split into single-rank communicators and reduce there.
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, rank, 0, sub, ierr)
  call ex_call('MPI_Comm_split', 0, 0)
  call MPI_COMM_RANK(sub, srank, ierr)
  call MPI_ALLREDUCE(iv, jv, 15, MPI_INTEGER, MPI_SUM, sub, ierr)
  call ex_call('MPI_Allreduce', 15*4, 15*4)
  if (jv(15) /= rank + 1) stop 4
  call MPI_COMM_FREE(sub, ierr)
  call ex_call('MPI_Comm_free', 0, 0)

  call ex_call('MPI_Finalize', 0, 0)
  call ex_write(rank)
  if (rank == 0) print '(a,i0)', 'f_usempi: ok ', jv(15)
  call MPI_FINALIZE(ierr)
end program f_usempi
